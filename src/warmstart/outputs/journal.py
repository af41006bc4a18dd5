"""``--overwrite`` that survives a kill: the old directory is moved aside under a journal.

``move_aside(path)`` writes ``.NAME.replacing`` beside ``path`` (what was moved where, and by which
process), locks it for as long as the process lives, and records it under the cache's ``replacing/`` so
that any later command finds it. The new directory then fills; ``settle`` (its first checkpoint, or its
results, are written) removes the old one, ``abandon`` (it failed first) puts the old one back. When the
process dies in between, nobody holds the lock: ``recover`` (run on the next command's outputs, and by
``recover_all`` when any command starts) restores the old directory, or finishes the replacement when it
had been settled, and says which."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from warmstart.paths import cache_dir

_HELD: dict[Path, tuple] = {}  # new directory -> (locked journal file, the directory moved aside)


def _abs(path: str | Path) -> Path:
    """``path`` absolute, its parent's symlinks resolved (not its own: a link is replaced, not followed)."""
    path = Path(path).expanduser().absolute()
    return path.parent.resolve() / path.name


def journal_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.replacing")


def _pointer(path: Path) -> Path:
    return cache_dir() / "replacing" / (hashlib.sha1(str(path).encode()).hexdigest()[:16] + ".json")


def _write(fh, data: dict) -> None:
    fh.seek(0)
    fh.truncate()
    fh.write(json.dumps(data))
    fh.flush()
    os.fsync(fh.fileno())


def move_aside(path: str | Path) -> Path:
    """Move the directory ``path`` aside (journaled and locked) before a new one is made there."""
    path = _abs(path)
    aside = path.with_name(f".{path.name}.replaced-{os.getpid()}")
    journal = journal_path(path)
    fh = open(journal, "a+", encoding="utf-8")  # noqa: SIM115 - held until settle/abandon or exit
    fcntl.flock(fh, fcntl.LOCK_EX)
    shutil.rmtree(aside, ignore_errors=True)  # left by an earlier replacement of this process id
    _write(fh, {"path": path.name, "aside": aside.name, "pid": os.getpid(), "state": "aside"})
    with contextlib.suppress(OSError):  # a cache that cannot be written: the journal beside still works
        _pointer(path).parent.mkdir(parents=True, exist_ok=True)
        _pointer(path).write_text(json.dumps({"path": str(path)}), encoding="utf-8")
    path.rename(aside)
    _HELD[path] = (fh, aside)
    return aside


def _done(path: Path, fh) -> None:
    with contextlib.suppress(OSError):
        journal_path(path).unlink()
    with contextlib.suppress(OSError):
        _pointer(path).unlink()
    fh.close()


def settle(run_dir: str | Path) -> None:
    """The directory in ``run_dir`` (or one above it) has its first checkpoint: the old one can go."""
    here = _abs(run_dir)
    for new in [k for k in _HELD if k == here or k in here.parents]:
        fh, aside = _HELD.pop(new)
        data = json.loads(Path(fh.name).read_text(encoding="utf-8") or "{}")
        _write(fh, {**data, "state": "settled"})  # a kill while removing: the next command finishes it
        shutil.rmtree(aside, ignore_errors=True)
        _done(new, fh)


def abandon(run_dir: str | Path) -> bool:
    """The new directory failed before it was settled: remove it and put back the one it replaced; False
    when it replaced none (or was settled)."""
    new = _abs(run_dir)
    held = _HELD.pop(new, None)
    if held is None:
        return False
    fh, aside = held
    shutil.rmtree(new, ignore_errors=True)
    aside.rename(new)
    _done(new, fh)
    return True


def recover(path: str | Path, say=None) -> str | None:
    """Put right a replacement of ``path`` that a dead process left half done; the sentence said, or None
    when there was nothing to do (or its process still runs)."""
    path = _abs(path)
    journal = journal_path(path)
    if path in _HELD or not journal.is_file():
        return None
    with open(journal, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its process is alive: it settles or abandons itself
        fh.seek(0)
        try:
            data = json.loads(fh.read() or "{}")
        except ValueError:
            data = {}
        line = _put_right(path, data)
        _done(path, fh)
    if line:
        (say or _stderr)(line)
    return line


def _put_right(path: Path, data: dict) -> str | None:
    aside = path.with_name(str(data.get("aside", "")))
    if not data.get("aside") or not aside.is_dir():
        return None
    if data.get("state") == "settled":
        shutil.rmtree(aside, ignore_errors=True)
        return f"finished replacing {path}: the old one, moved aside by an interrupted --overwrite, is gone"
    if path.exists():
        from warmstart.outputs.marker import made_by_warmstart

        if not made_by_warmstart(path) and any(path.iterdir()):
            return f"{path} was replaced by an interrupted --overwrite; the old directory is kept as {aside}"
        shutil.rmtree(path)
    aside.rename(path)
    return (
        f"restored {path}: an --overwrite (process {data.get('pid')}) was interrupted before the new run "
        "had a checkpoint, so the earlier one is back"
    )


def recover_all(say=None) -> list[str]:
    """Every interrupted replacement recorded in the cache (any command runs this as it starts)."""
    folder = cache_dir() / "replacing"
    lines = []
    for pointer in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            path = Path(json.loads(pointer.read_text(encoding="utf-8"))["path"])
            line = recover(path, say)
            lines += [line] if line else []
            if not journal_path(path).exists():
                pointer.unlink(missing_ok=True)
    return lines


def _stderr(line: str) -> None:
    print(f"warmstart: {line}", file=sys.stderr)
