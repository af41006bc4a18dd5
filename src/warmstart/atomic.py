"""Write a file atomically: into a temp file next to it, then renamed into place (never half-written)."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from warmstart.errors import WarmstartError


def write_atomic(path: str | os.PathLike, write: Callable, text: bool = False) -> Path:
    """Call ``write(file)`` on a temp file beside ``path`` (binary, or UTF-8 text with '\\n' newlines),
    then rename it to ``path``; on any error the temp file is removed and ``path`` is untouched."""
    path = Path(path)
    check_writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        mode = {"mode": "w", "encoding": "utf-8", "newline": "\n"} if text else {"mode": "wb"}
        with os.fdopen(fd, **mode) as fh:
            write(fh)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a data file is not
        os.replace(tmp, path)
    except Exception as exc:
        if disk_full(exc):
            raise disk_full_error(path) from None
        raise
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def check_writable(path: str | os.PathLike) -> None:
    """Refuse, before any work, an output ``path`` that cannot be created: the nearest existing ancestor
    is a file, or a directory this process may not write to (as root, os.access says yes to all)."""
    path = Path(path).absolute()
    parent = next(p for p in path.parents if p.exists())
    if not parent.is_dir():
        raise WarmstartError(
            f"cannot write {path}: {parent} is a file, not a directory", "choose another path"
        )
    if not os.access(parent, os.W_OK):
        raise WarmstartError(
            f"cannot write {path}: {parent} is not writable", "choose another path, or fix its permissions"
        )


def disk_full(exc: BaseException) -> bool:
    """True for "no space left on device" or "disk quota exceeded", also as safetensors reports it (a
    SafetensorError with the OS message and no errno)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return any(m in str(exc) for m in ("No space left on device", "os error 28", "Disk quota exceeded"))


def disk_full_error(path: str | os.PathLike, fix: str | None = None) -> WarmstartError:
    """The one-line error for a write to ``path`` that ran out of space (nothing in place was replaced)."""
    path = Path(path)
    return WarmstartError(
        f"the disk is full (ENOSPC): could not write {path.name} in {path.parent}",
        fix or "free space on that disk and run again; nothing already there was replaced",
    )
