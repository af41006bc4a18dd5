"""The last line of defence: an error no check foresaw still ends in one line, never a traceback on the
terminal. Known classes of input problems get their own line and exit code 2; anything else is a bug: one
line naming the command, the traceback in a log file (its path printed), exit code 1."""

from __future__ import annotations

import errno
import os
import tempfile
import time
import traceback
from pathlib import Path

from warmstart.paths import cache_dir


def first_line(exc: BaseException) -> str:
    from warmstart.train.distributed import first_line  # torch: loaded when an error is said, not at start

    return first_line(exc)


def known(exc: BaseException) -> str | None:
    """One line (without "error: ") for an input problem of a known class, else None."""
    where = getattr(exc, "filename", None)
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return f"a file name is too long for the file system: {str(where)[:80]}...; choose a shorter name"
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied: {where}; choose a path you can write to (or read, for an input)"
    if isinstance(exc, OSError) and exc.errno == errno.EEXIST:
        return f"{where} already exists as a file where a directory is written; choose another --out"
    if isinstance(exc, OSError) and exc.errno == errno.ENOTDIR:
        return f"a path goes through a file as if it were a directory: {where}; choose another path"
    if isinstance(exc, OSError) and exc.errno == errno.EROFS:
        return f"the file system is read-only: {where}; choose a path you can write to"
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply to read (a config or JSON file?); flatten it"
    if isinstance(exc, MemoryError):
        return "not enough memory for this input; use a smaller input or batch, or a machine with more memory"
    if isinstance(exc, UnicodeError):
        return f"the text holds characters that cannot be encoded ({first_line(exc)}); fix or drop them"
    return None


def log_path() -> Path:
    """A fresh file under the cache's logs/ (or the system's temporary directory if that is not writable)."""
    name = f"warmstart-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    for root in (cache_dir() / "logs", Path(tempfile.gettempdir())):
        try:
            root.mkdir(parents=True, exist_ok=True)
            path = root / name
            path.touch()
            return path
        except OSError:
            continue
    return Path(os.devnull)


def unexpected(exc: BaseException, command: str) -> str:
    """The one line of a bug; the traceback goes to a log file."""
    path = log_path()
    try:
        path.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
    except OSError:
        pass
    return (
        f"warmstart {command} failed unexpectedly ({type(exc).__name__}: {first_line(exc)}); this is a bug "
        f"in warmstart: the traceback is in {path}; please report it with that file"
    )
