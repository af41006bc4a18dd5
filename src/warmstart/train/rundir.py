"""Run directories: refuse to clobber one unless asked, and record the resolved config in it.

``--overwrite`` never deletes first, and replaces only a directory warmstart made (its ``.warmstart``
marker, written here into every run, study, probe, demo and word2vec directory): the old run is moved aside
under a journal (outputs/journal.py) and removed only when the new run has written its first checkpoint
(``settle``, called by the Checkpointer); a run that fails before that puts the old one back (``abandon``),
and a run killed before that is put back by the next command. An output that is, contains or lies inside
one of the command's inputs is refused before anything is touched (``paths.refuse_overlap``)."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from pathlib import Path

from warmstart.atomic import check_writable
from warmstart.config import load_yaml, save_yaml
from warmstart.errors import WarmstartError
from warmstart.outputs import abandon, mark, move_aside, recover, refuse_foreign, settle
from warmstart.paths import refuse_replacing_home

__all__ = ["abandon", "check_free", "hold", "open_run_dir", "settle", "unwind"]
CONFIG_FILE = "config.yaml"
# what a run that trained has written: a checkpoint, a finished seed, or a log of its steps
STARTED = ("checkpoints", "best", "final", "test_metrics.json", "metrics.jsonl")


RUN_DIR_FIX = "pass --resume to continue it, --overwrite to replace it, or choose another --out"


def unwind(run_dir: str | Path, resume: bool, error: BaseException) -> None:
    """After a run failed: the directory it replaced comes back (``--overwrite``); or, when a refusal (a
    WarmstartError: ``train.device=cuda`` on a CPU machine...) stopped a new run before it trained, the
    directory this command made goes, so that the same command, corrected, runs again as it is. A directory
    holding a checkpoint, a finished seed or a log of steps stays (to resume, or to read)."""
    if abandon(run_dir) or resume or not isinstance(error, WarmstartError):
        return
    path = Path(run_dir)
    if path.is_dir() and not any(p.name in STARTED for p in path.rglob("*")):
        shutil.rmtree(path, ignore_errors=True)


def check_free(path: str | Path, overwrite: bool = False, fix: str = RUN_DIR_FIX) -> bool:
    """Refuse a non-empty directory unless ``overwrite``; True when there is one to replace. Call it before
    long work whose results go there, so that a refusal costs nothing."""
    path = Path(path)
    check_writable(path)
    recover(path)  # an --overwrite of it that was killed: the old run back (or the new one finished)
    if path.exists() and not path.is_dir():
        raise WarmstartError(f"{path} exists and is not a directory", "choose another --out")
    taken = path.exists() and any(path.iterdir())
    if taken and not overwrite:
        raise WarmstartError(f"the run directory {path} already exists", fix)
    if taken:
        refuse_replacing_home(path, overwrite)  # from Python too: never the working or home directory
        refuse_foreign(path)
    return taken


def open_run_dir(
    path: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    fix: str = RUN_DIR_FIX,
    what: str = "run",
) -> Path:
    """A fresh run directory (its marker says ``what`` warmstart made), or the existing one when resuming.
    Never deletes unless ``overwrite``, and then only a directory warmstart made."""
    path = Path(path)
    if resume:
        if not (path / CONFIG_FILE).is_file():
            raise WarmstartError(
                f"cannot resume: {path} is not a run directory (no {CONFIG_FILE})",
                "pass the directory of an earlier run to --resume",
            )
        return path
    if check_free(path, overwrite, fix):
        with hold(path):  # a run being trained cannot be replaced under the process training it
            pass
        move_aside(path)
    path.mkdir(parents=True, exist_ok=True)
    mark(path, what)
    return path


@contextlib.contextmanager
def hold(run_dir: str | Path):
    """Lock ``run_dir`` while a process trains in it (an advisory lock on its config.yaml, which every run
    has once it starts): a second process resuming or replacing the same run is refused in one line. The
    lock goes with the process, so a killed run leaves none behind. Without a config.yaml yet, nothing to
    lock."""
    config = Path(run_dir) / CONFIG_FILE
    if not config.is_file():
        yield
        return
    with open(config, "rb") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WarmstartError(
                f"{run_dir} is in use: another warmstart process is training in it",
                "wait for it to finish (or stop it), then try again; or choose another --out",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def saved_config(run_dir: Path) -> dict:
    return load_yaml(open_run_dir(run_dir, resume=True) / CONFIG_FILE)


def save_config(run_dir: Path, data: dict) -> None:
    save_yaml(data, Path(run_dir) / CONFIG_FILE)
