"""Write a file atomically: into a temp file next to it, then renamed into place (never half-written)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomic(path: str | os.PathLike, write: Callable, text: bool = False) -> Path:
    """Call ``write(file)`` on a temp file beside ``path`` (binary, or UTF-8 text with '\\n' newlines),
    then rename it to ``path``; on any error the temp file is removed and ``path`` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        mode = {"mode": "w", "encoding": "utf-8", "newline": "\n"} if text else {"mode": "wb"}
        with os.fdopen(fd, **mode) as fh:
            write(fh)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a data file is not
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
