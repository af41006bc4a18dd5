"""Where warmstart keeps what it builds once and reuses (derived datasets, npm data): one setting.

The cache root is ``$WARMSTART_CACHE`` when set, else ``$XDG_CACHE_HOME/warmstart``, else
``~/.cache/warmstart``. The test suite points ``WARMSTART_CACHE`` at a temporary directory, so no test
reads or writes a user's cache.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The root of warmstart's cache (see the module docstring)."""
    if os.environ.get("WARMSTART_CACHE"):
        return Path(os.environ["WARMSTART_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "warmstart"
    return Path("~/.cache/warmstart").expanduser()
