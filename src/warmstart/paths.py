"""Where warmstart keeps what it builds once and reuses (derived datasets, npm data): one setting.

The cache root is ``$WARMSTART_CACHE`` when set, else ``$XDG_CACHE_HOME/warmstart``, else
``~/.cache/warmstart``. The test suite points ``WARMSTART_CACHE`` at a temporary directory, so no test
reads or writes a user's cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from warmstart.errors import WarmstartError


def cache_dir() -> Path:
    """The root of warmstart's cache (see the module docstring)."""
    if os.environ.get("WARMSTART_CACHE"):
        return Path(os.environ["WARMSTART_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "warmstart"
    return Path("~/.cache/warmstart").expanduser()


def refuse_overlap(out: str | Path, inputs: dict[str, str | Path | None]) -> None:
    """Refuse an output that is, contains or lies inside an input (``{what: path}``; names that are not
    paths, such as a packaged dataset's, are skipped)."""
    o = Path(out).expanduser().resolve()
    for what, given in inputs.items():
        if not given or not Path(given).expanduser().exists():
            continue
        i = Path(given).expanduser().resolve()
        how = "is" if o == i else "contains" if o in i.parents else "lies inside" if i in o.parents else None
        if how:
            raise WarmstartError(
                f"the output {out} {how} the {what} {given}, which this command reads",
                "choose an --out outside every input (nothing was changed)",
            )


def refuse_same_file(out: str | Path | None, inputs: dict[str, str | Path | None]) -> None:
    """``refuse_overlap`` for a file output (``predict --input x --out x`` would write its predictions over
    the texts it reads): only the inputs that are files count, so writing into an input run's directory
    stays allowed; stdout (``-`` or no ``--out``) is never refused."""
    if out in (None, "-"):
        return
    files = {what: given for what, given in inputs.items() if given and Path(given).expanduser().is_file()}
    refuse_overlap(out, files)
