"""Fault injection: `kill -9` a real pretraining run many times (during checkpoint writes, mid-training,
during start-up), resume it with --resume each time, and finish with weights bitwise equal to an
uninterrupted run. After every kill the latest checkpoint must be complete, loadable and equal to the
uninterrupted run's checkpoint of the same step.

WARMSTART_FAULT_KILLS sets the number of kills (default 24, enough for each kind; 40 and more for a longer
soak); each costs a process start (1-3 s).
"""

import os
import random
import signal
import time
from collections import Counter

import pytest

from tests.helpers.runs import (
    SAVE_EVERY,
    STEPS,
    final_weights,
    finish,
    last_train_step,
    latest_checkpoint,
    read_checkpoint,
    same_tensors,
    start,
    wait_for,
)
from warmstart.train.checkpoint import PAUSE_ENV, Checkpointer, step_dirs

pytestmark = pytest.mark.integration

KILLS = int(os.environ.get("WARMSTART_FAULT_KILLS", "24"))
PAUSE = 0.03  # "write" kills: seconds each checkpoint write sleeps between the model and the trainer state
LABELS = {"write": "around a checkpoint write", "training": "mid-training", "startup": "during start-up"}


def _writing(run, step: int | None):
    """True while the checkpoint of ``step`` (None: RUN/final) is being written."""
    folder, name = (run, ".tmp-final-") if step is None else (run / "checkpoints", f".tmp-step-{step:08d}-")
    return lambda: folder.is_dir() and any(p.name.startswith(name) for p in folder.iterdir())


def _kill_when(mode: str, proc, run, rng: random.Random) -> bool:
    """SIGKILL ``proc`` at a moment chosen by ``mode``; False if it finished first."""
    latest = latest_checkpoint(run)
    done = int(latest.name.split("-")[1]) if latest else 0
    if mode == "startup":  # import, setup, the first evaluation or the first steps
        at = time.monotonic() + rng.uniform(0.1, 2.5)
        ready = wait_for(proc, lambda: time.monotonic() > at)
    elif mode == "training":  # once this process has logged a step of its own
        since = time.time() - 0.01  # records carry time.time() rounded to ms
        ready = wait_for(proc, lambda: last_train_step(run, since) > done)
        time.sleep(rng.uniform(0, 0.15))
    else:  # a checkpoint write one or two saves ahead (the final model's past the last step)
        target = done + SAVE_EVERY * rng.randint(1, 2)
        ready = wait_for(proc, _writing(run, target if target <= STEPS else None))
        time.sleep(rng.uniform(0, PAUSE))
    if not ready or proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGKILL)
    return True


def _check_after_kill(run, baseline, pid: int) -> bool:
    """The latest checkpoint is complete and equals the uninterrupted run's; True if the killed process
    ``pid`` left a half-written checkpoint behind (the kill landed inside a write)."""
    for _, path in step_dirs(run / "checkpoints"):  # every visible checkpoint is complete
        ckpt = read_checkpoint(path)
    latest = latest_checkpoint(run)
    if latest is not None:
        base = read_checkpoint(baseline / "checkpoints" / latest.name)
        for part in ("model", "optimizer"):
            assert same_tensors(ckpt[part], base[part]), f"{latest.name}: {part} differs"
        assert ckpt["rng"]["torch"].equal(base["rng"]["torch"])  # numpy's and Python's are never seeded
    left = [*run.glob(f"*-{pid}@*"), *run.glob(f"checkpoints/*-{pid}@*")]  # .tmp-NAME-PID@HOST
    return any(p.name.startswith(".tmp-") for p in left)


@pytest.mark.slow
def test_kill_9_many_times_then_resume_gives_the_uninterrupted_weights(small_shards, cli_baseline, tmp_path):
    rng = random.Random(8)
    run = tmp_path / "run"
    kills: Counter = Counter()
    while True:
        mode = rng.choices(["write", "training", "startup"], [4, 4, 2])[0]
        slow_writes = {PAUSE_ENV: str(PAUSE)} if mode == "write" else {}  # else writes take their own time
        proc = start(small_shards, run, resume=(run / "config.yaml").is_file(), **slow_writes)
        if sum(kills.values()) < KILLS and _kill_when(mode, proc, run, rng):
            code, err = finish(proc)
            assert code == -signal.SIGKILL, err
            mid_write = _check_after_kill(run, cli_baseline, proc.pid)
            kills["during a checkpoint write" if mid_write else LABELS[mode]] += 1
            continue
        code, err = finish(proc)
        assert code == 0, err
        break
    total = sum(kills.values())
    print(f"\nfault injection: {total} kills survived ({', '.join(f'{n} {k}' for k, n in kills.items())})")
    assert total >= KILLS // 2 and kills["during a checkpoint write"] >= 1
    assert read_checkpoint(latest_checkpoint(run))  # the last one, step STEPS
    assert same_tensors(final_weights(run), final_weights(cli_baseline))


def test_latest_clears_or_undoes_what_a_kill_left(tmp_path):
    ckpts = tmp_path / "checkpoints"
    for name in ("step-00000004", ".tmp-step-00000008-99", ".del-step-00000002"):
        (ckpts / name / "trainer").mkdir(parents=True)
    (tmp_path / ".old-best-99").mkdir()  # killed between RUN/best -> .old and .tmp -> RUN/best
    (tmp_path / ".tmp-best-99").mkdir()
    (tmp_path / "final").mkdir()  # killed after both renames, before removing the old one
    (tmp_path / ".old-final-98").mkdir()
    assert Checkpointer(tmp_path, {}).latest() == ckpts / "step-00000004"
    assert sorted(p.name for p in ckpts.iterdir()) == ["step-00000004"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best", "checkpoints", "final"]
