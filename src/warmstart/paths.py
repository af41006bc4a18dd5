"""Where warmstart keeps what it builds once and reuses (derived datasets, npm data): one setting.

The cache root is ``$WARMSTART_CACHE`` when set, else ``$XDG_CACHE_HOME/warmstart``, else
``~/.cache/warmstart``. The test suite points ``WARMSTART_CACHE`` at a temporary directory, so no test
reads or writes a user's cache.
"""

from __future__ import annotations

import contextlib
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


def refuse_replacing_home(out: str | Path | None, overwrite: bool) -> None:
    """``--overwrite`` replaces the directory ``--out`` names: never the working directory, the home
    directory or a directory holding either (``--out .``, ``--out ..``, ``--out ~``, ``--out /``). Refused
    before anything is read or moved."""
    if not overwrite or not out or out == "-":
        return
    o = Path(out).expanduser().resolve()
    places = []
    for what, where in (("working directory", Path.cwd), ("home directory", Path.home)):
        with contextlib.suppress(OSError, RuntimeError):  # no working or home directory to speak of
            places.append((what, where().resolve()))
    for what, place in sorted(places, key=lambda p: o != p[1]):  # the one it is, before one it holds
        if o == place or o in place.parents:
            how = f"is the {what}" if o == place else f"holds the {what} ({place})"
            raise WarmstartError(
                f"--out {out} {how}: --overwrite would replace it and everything in it",
                "pass a directory of its own to --out, e.g. runs/NAME (nothing was changed)",
            )
