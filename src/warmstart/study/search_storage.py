"""A search's Optuna study in an RDB storage (SQLite in DIR by default, any SQLAlchemy URL with --storage):
several processes, on one machine or several, share it as Optuna distributes work.

- Each trial records the host and process that runs it. A trial left RUNNING by a process of this host that
  is gone (kill -9) is marked failed at the next ask, and its configuration is asked again (a retry, noted
  in the trial's ``retry_of``). Processes on other hosts beat a heartbeat: a trial whose beats stopped for
  ``GRACE`` seconds fails and is retried the same way (Optuna's RetryFailedTrialCallback).
- Asking is done under a lock file in DIR, so that the processes of one machine never run more than the
  trials asked for, and a grid point is taken once: the grid's next point is the first that no finished,
  running or waiting trial holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
import time
import warnings
from pathlib import Path

from warmstart.errors import WarmstartError
from warmstart.study.search_sampler import search_sampler
from warmstart.study.search_space import Space
from warmstart.study.search_spec import SearchSpec

HEARTBEAT, GRACE = 30, 120  # seconds
STARTS = 5  # tries to open a storage whose tables another process is creating
LOCK_FILE = ".search.lock"


def open_study(spec: SearchSpec, out: Path, direction: str = "maximize"):
    """The search's Optuna study, created on first use (``load_if_exists``)."""
    import optuna
    from optuna import storages
    from optuna.storages import RDBStorage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # warmstart drives the heartbeat itself (``beating``): Optuna's notes on that are not the user's business
    warnings.filterwarnings(
        "ignore", category=optuna.exceptions.ExperimentalWarning, module="optuna|warmstart"
    )
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed")
    url = spec.storage_url(out)
    for attempt in range(STARTS):  # processes starting together on a new database race to create its tables
        try:
            with asking(spec, out):  # one process of this machine creates them; other machines retry
                storage = RDBStorage(
                    url,
                    heartbeat_interval=HEARTBEAT,
                    grace_period=GRACE,
                    **_retry_callback(storages),
                    engine_kwargs={"connect_args": {"timeout": 60}} if url.startswith("sqlite") else None,
                )
            break
        except Exception as exc:  # SQLAlchemy's errors: a bad URL, a driver that is not installed
            if _raced(exc) and attempt + 1 < STARTS:
                time.sleep(0.5 * (attempt + 1))  # another process created the tables first: use them
                continue
            raise WarmstartError(
                f"cannot open the study storage {url} ({type(exc).__name__})",
                "pass an SQLAlchemy URL, e.g. sqlite:///search.db or postgresql://...",
            ) from None
    sampler = search_sampler(_space_is_grid(spec), spec.sampler_seed, spec.trials)
    pruner = PRUNERS[spec.pruner]()
    return optuna.create_study(
        storage=storage,
        sampler=sampler,
        pruner=pruner,
        study_name=spec.study_name,
        direction=direction,
        load_if_exists=True,
    )


def _raced(exc: Exception) -> bool:
    """Whether ``exc`` is another process creating the same tables: a duplicate schema version, or a table
    created between SQLAlchemy's check and its CREATE."""
    name = type(exc).__name__
    return name == "IntegrityError" or (name == "OperationalError" and "already exists" in str(exc))


PRUNERS = {  # --pruner: the median of earlier trials at the same evaluation, or successive halving
    "median": lambda: _optuna().pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1),
    "halving": lambda: _optuna().pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3),
    "none": lambda: _optuna().pruners.NopPruner(),
}


def _optuna():
    import optuna

    return optuna


def _space_is_grid(spec: SearchSpec) -> bool:
    from warmstart.study.search_space import open_space

    return open_space(spec.space).grid


@contextlib.contextmanager
def asking(spec: SearchSpec, out: Path):
    """The machine-wide lock around counting and asking (module docstring): beside an SQLite study's file
    (processes with other --out directories may share it), else in ``out``."""
    url = spec.storage_url(out)
    path = Path(url[len("sqlite:///") :] + ".lock") if url.startswith("sqlite:///") else out / LOCK_FILE
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _retry_callback(storages) -> dict:
    """Optuna's retry of a trial whose heartbeat stopped, under its name since 4.9 (before: the older one)."""
    if hasattr(storages, "RetryHeartbeatStaleTrialCallback"):
        return {"heartbeat_stale_trial_callback": storages.RetryHeartbeatStaleTrialCallback(max_retry=2)}
    return {"failed_trial_callback": storages.RetryFailedTrialCallback(max_retry=2)}


def fail_dead(study) -> list[int]:
    """Mark failed the RUNNING trials of processes of this host that are gone, and enqueue each one's
    configuration again; Optuna's heartbeat does the same for other hosts. Returns the failed numbers."""
    import optuna
    from optuna.trial import TrialState

    host, failed = socket.gethostname(), []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        pid = t.user_attrs.get("pid")
        if t.user_attrs.get("host") != host or not isinstance(pid, int) or _alive(pid):
            continue
        study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        study.enqueue_trial(t.params, user_attrs={"retry_of": t.number}, skip_if_exists=False)
        failed.append(t.number)
    optuna.storages.fail_stale_trials(study)  # other hosts: heartbeats older than GRACE
    return failed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def counted(study) -> int:
    """Trials that count towards --trials: finished (complete or pruned) and running."""
    from optuna.trial import TrialState

    return len(
        study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING))
    )


def waiting(study) -> bool:
    """Whether a trial waits to be asked (a retry, or a grid point another process enqueued)."""
    from optuna.trial import TrialState

    return bool(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))


def next_point(study, space: Space, seed: int) -> dict | None:
    """The grid's first point that no finished, running or waiting trial holds (None: all are taken)."""
    from optuna.trial import TrialState

    held = TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING
    taken = []
    for t in study.get_trials(deepcopy=False, states=held):
        params = t.params or t.system_attrs.get("fixed_params", {})
        taken.append({k: params.get(k) for k in (d.key for d in space.dims)})
    return next((p for p in space.points(seed) if p not in taken), None)


def claim(trial) -> None:
    """Record which process runs ``trial`` (``fail_dead`` reads it)."""
    trial.set_user_attr("host", socket.gethostname())
    trial.set_user_attr("pid", os.getpid())


@contextlib.contextmanager
def beating(study, trial):
    """The trial's heartbeat while it runs (other hosts tell a dead process by its stopped beats)."""
    storage, stop = study._storage, threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT):
            with contextlib.suppress(Exception):
                storage.record_heartbeat(trial._trial_id)

    storage.record_heartbeat(trial._trial_id)
    thread = threading.Thread(target=beat, name="search-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
