"""Temporary directories that a killed writer left beside its output, and how the next write finds them.

A writer names its temporary directory ``PREFIX PID@HOST`` (``.tmp-NAME-1234@box``). The next write to the
same output removes those whose process is gone: same host, pid no longer running (the rule of
data/shard_writer.py's ``remove_stale``). A name without ``@HOST`` (older versions) counts as this host's;
another host's, or a pid that runs (maybe reused), is left alone. Kept here, the lowest layer that writes
directories (tokenizers), so that train/ and hub/ share it.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from pathlib import Path


def host() -> str:
    """This machine's name as it goes into temporary names: no ``-``, so ``NAME-PID@HOST`` splits at the
    last ``-``."""
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:64] or "host"


def tag() -> str:
    """``PID@HOST`` of this process."""
    return f"{os.getpid()}@{host()}"


def running(pid: int) -> bool:
    """Whether ``pid`` runs on this host (a pid we cannot ask about counts as running)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process
        return True
    return True


def dead_writers(parent: Path, prefix: str, suffix: bool = False) -> list[Path]:
    """The directories in ``parent`` named ``prefix`` + ``PID[@HOST]`` (+ ``-RANDOM`` when ``suffix``)
    whose process, on this host, is gone; sorted by name."""
    if not parent.is_dir():
        return []
    rest = r"(?:-[A-Za-z0-9_]+)?" if suffix else ""
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+)(?:@([A-Za-z0-9._]+))?{rest}$")
    found = []
    for entry in sorted(parent.iterdir()):
        match = pattern.match(entry.name)
        if not match or match.group(2) not in (None, host()) or running(int(match.group(1))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            found.append(entry)
    return found


def swap_name(final: Path, role: str) -> Path:
    """Where train/checkpoint.py's ``atomic_dir`` writes ``final`` (role ``tmp``) or moves the ``final`` it
    replaces aside (role ``old``): ``.ROLE-NAME-PID@HOST`` beside it."""
    return final.parent / f".{role}-{final.name}-{tag()}"


def clear_swap(final: Path) -> list[Path]:
    """Undo what an ``atomic_dir`` of ``final`` left when its process was killed: an ``.old-NAME-PID`` whose
    ``final`` is missing (cut between the swap's two renames) is put back, then its ``.tmp-NAME-PID`` and
    ``.old-NAME-PID`` directories go. Returns those removed."""
    removed = []
    for old in dead_writers(final.parent, f".old-{final.name}-"):
        if not final.exists():
            os.rename(old, final)
            continue
        shutil.rmtree(old, ignore_errors=True)
        removed.append(old)
    for tmp in dead_writers(final.parent, f".tmp-{final.name}-"):
        shutil.rmtree(tmp, ignore_errors=True)
        removed.append(tmp)
    return removed


def clear_swaps(parent: Path) -> list[Path]:
    """``clear_swap`` for every output in ``parent`` that a killed ``atomic_dir`` left something of (for a
    folder warmstart owns, such as the cache's imports, whose names change with their sources)."""
    if not parent.is_dir():
        return []
    pattern = re.compile(r"^\.(?:tmp|old)-(.+)-\d+(?:@[A-Za-z0-9._]+)?$")
    names = {m.group(1) for p in parent.iterdir() if (m := pattern.match(p.name))}
    return [p for name in sorted(names) for p in clear_swap(parent / name)]
