"""Run directories: refuse to clobber one unless asked, and record the resolved config in it."""

from __future__ import annotations

import shutil
from pathlib import Path

from warmstart.atomic import check_writable
from warmstart.config import load_yaml, save_yaml
from warmstart.errors import WarmstartError

CONFIG_FILE = "config.yaml"


RUN_DIR_FIX = "pass --resume to continue it, --overwrite to replace it, or choose another --out"


def check_free(path: str | Path, overwrite: bool = False, fix: str = RUN_DIR_FIX) -> bool:
    """Refuse a non-empty directory unless ``overwrite``; True when there is one to replace. Call it before
    long work whose results go there, so that a refusal costs nothing."""
    path = Path(path)
    check_writable(path)
    if path.exists() and not path.is_dir():
        raise WarmstartError(f"{path} exists and is not a directory", "choose another --out")
    taken = path.exists() and any(path.iterdir())
    if taken and not overwrite:
        raise WarmstartError(f"the run directory {path} already exists", fix)
    return taken


def open_run_dir(
    path: str | Path, *, resume: bool = False, overwrite: bool = False, fix: str = RUN_DIR_FIX
) -> Path:
    """A fresh run directory, or the existing one when resuming. Never deletes unless ``overwrite``."""
    path = Path(path)
    if resume:
        if not (path / CONFIG_FILE).is_file():
            raise WarmstartError(
                f"cannot resume: {path} is not a run directory (no {CONFIG_FILE})",
                "pass the directory of an earlier run to --resume",
            )
        return path
    if check_free(path, overwrite, fix):
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def saved_config(run_dir: Path) -> dict:
    return load_yaml(open_run_dir(run_dir, resume=True) / CONFIG_FILE)


def save_config(run_dir: Path, data: dict) -> None:
    save_yaml(data, Path(run_dir) / CONFIG_FILE)
