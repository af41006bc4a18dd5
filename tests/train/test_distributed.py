"""torchrun on the CPU (gloo, 2 processes, real subprocesses): 2 processes with batch B/2 each train exactly
as 1 process with batch B (losses at every step, final weights); a 2-process run stopped by SIGTERM resumes
bitwise; a killed or hung process makes the other stop with one line; FSDP matches DDP and its checkpoint
loads in one process; finetuning too.

Each run prints its figures (max differences, seconds) with -s."""

import json
import os
import re
import shutil
import signal
import time

import pytest

from tests.helpers.dist import (
    MARKS,
    PRETRAIN,
    gone,
    max_diff,
    pretrain,
    records,
    run,
    start,
    wait_until,
    weights,
    workers,
)
from tests.helpers.runs import last_train_step
from warmstart.commands.pretrain import pretrain as pretrain_fn
from warmstart.errors import WarmstartError
from warmstart.train.checkpoint import read_tensors

pytestmark = MARKS
TOL = 1e-5
LOST = re.compile(
    r"error: process 0 of 2 lost contact with the others \((.+)\); another process failed, was killed or "
    r"hung longer than train\.dist_timeout: see its own error; continue with: warmstart pretrain --resume \S+"
)


@pytest.fixture(scope="module")
def runs(small_shards, tmp_path_factory):
    """The same 24 steps on 1 process (batch 8) and on 2 (DDP, batch 4 each): {"one": dir, "two": dir}."""
    root = tmp_path_factory.mktemp("dist")
    out = {"one": root / "one", "two": root / "two"}
    for procs, name, batch in ((0, "one", 8), (2, "two", 4)):
        code, err = pretrain(procs, small_shards, out[name], batch)
        assert code == 0, err
    return out


def _compare(a, b) -> tuple[float, float]:
    """(max |loss difference| over every logged train and validation step, max |weight difference|)."""
    diffs = []
    for split in ("train", "validation"):
        ra, rb = records(a, split), records(b, split)
        assert ra.keys() == rb.keys()
        diffs += [abs(ra[s]["loss"] - rb[s]["loss"]) for s in ra]
    return max(diffs), max_diff(weights(a / "final"), weights(b / "final"))


def test_two_processes_train_as_one_with_the_whole_batch(runs):
    assert len(records(runs["two"], "train")) == 24  # only the first process logs: each step once
    loss, w = _compare(runs["one"], runs["two"])
    print(f"\n1 process (batch 8) vs 2 (batch 4 each): max loss diff {loss:.2e}, max weight diff {w:.2e}")
    assert loss < TOL and w < TOL
    ra, rb = records(runs["one"], "train"), records(runs["two"], "train")
    assert all(abs(ra[s]["grad_norm"] - rb[s]["grad_norm"]) < 1e-4 for s in ra)
    trainer = runs["two"] / "checkpoints" / "step-00000024" / "trainer"
    assert (trainer / "rng-rank1.safetensors").is_file() and (trainer / "rng-rank1.json").is_file()


def test_a_two_process_run_stopped_by_sigterm_resumes_exactly(small_shards, runs, tmp_path):
    cut = tmp_path / "cut"
    args = ["pretrain", "--shards", str(small_shards), "--out", str(cut), "--batch-size", "4"]
    proc = start(2, args + PRETRAIN, tmp_path / "cut-log")
    wait_until(lambda: last_train_step(cut) >= 4 or proc.poll() is not None, 120, "step 4")
    proc.send_signal(signal.SIGTERM)  # to torchrun, which passes it on to both processes, as a cluster does
    proc.wait(timeout=120)
    err = (tmp_path / "cut-log.err").read_text()
    stopped = re.findall(r"stopped by SIGTERM after step (\d+); checkpoint \S+; continue with: (.+)", err)
    assert proc.returncode != 0 and stopped, err
    assert len({s for s, _ in stopped}) == 1  # both processes stopped after the same step
    step = int(stopped[0][0])
    assert 4 <= step < 24 and stopped[0][1] == f"warmstart pretrain --resume {cut}"
    assert (cut / "checkpoints" / f"step-{step:08d}").is_dir() and not (cut / "final").exists()

    code, err = run(2, ["pretrain", "--resume", str(cut)], tmp_path / "resume-log")
    assert code == 0, err
    wa, wb = weights(runs["two"] / "final"), weights(cut / "final")
    assert all(wa[k].equal(wb[k]) for k in wa), "resumed weights differ from the uninterrupted run's"
    losses = [{s: r["loss"] for s, r in records(d, "train").items()} for d in (runs["two"], cut)]
    assert losses[0] == losses[1]  # every step logged once, with the uninterrupted run's loss
    print(f"\nstopped after step {step}, resumed on 2 processes: final weights bitwise equal")


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_a_lost_process_stops_the_other_with_one_line(small_shards, tmp_path, how):
    """SIGKILL: the other process's next collective fails at once. SIGSTOP (a hung process): it fails when
    train.dist_timeout runs out."""
    timeout = 20 if how == "SIGKILL" else 6
    out = tmp_path / "run"
    args = ["pretrain", "--shards", str(small_shards), "--out", str(out), "--batch-size", "4"]
    extra = ["train.steps=100000", "train.eval_every=0", "train.save_every=0"]
    extra.append(f"train.dist_timeout={timeout}")
    proc = start(2, args + PRETRAIN + extra, tmp_path / "log")
    try:
        wait_until(lambda: last_train_step(out) >= 3, 120, "step 3")
        pids = workers(proc.pid)
        assert sorted(pids) == [0, 1], pids
        t0 = time.monotonic()
        os.kill(pids[1], getattr(signal, how))
        wait_until(lambda: gone(pids[0]), timeout + 10, "the other process to exit")
        took = time.monotonic() - t0
    finally:
        if how == "SIGSTOP" and "pids" in locals():
            os.kill(pids[1], signal.SIGKILL)
        proc.wait(timeout=60)
    err = (tmp_path / "log.err").read_text()
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    print(f"\n{how} to process 1: process 0 exited after {took:.1f} s (timeout {timeout} s): {lines}")
    assert proc.returncode != 0
    assert len(lines) == 1 and (m := LOST.fullmatch(lines[0])), err
    assert "warmstart/" not in err  # no traceback of ours (torchrun prints its own report)
    if how == "SIGKILL":
        assert took < timeout
    else:
        assert re.search("timed out|timeout", m.group(1), re.IGNORECASE) and timeout - 1 < took < timeout + 8


def test_fsdp_matches_ddp_and_its_checkpoint_loads_in_one_process(small_shards, runs, tmp_path):
    out = tmp_path / "fsdp"
    code, err = pretrain(2, small_shards, out, 4, "train.fsdp=true")
    assert code == 0, err
    loss, w = _compare(runs["two"], out)
    best = max_diff(weights(runs["two"] / "best"), weights(out / "best"))
    ckpt = "checkpoints/step-00000024/trainer/optimizer.safetensors"
    opt = max_diff(read_tensors(runs["two"] / ckpt), read_tensors(out / ckpt))
    print(f"\nFSDP vs DDP (2 processes): max loss diff {loss:.2e}, weights {w:.2e}, optimizer {opt:.2e}")
    assert loss < TOL and w < TOL and best < TOL and opt < 1e-4
    same = "checkpoints/step-00000024/trainer/optimizer.json"
    assert (runs["two"] / same).read_text() == (out / same).read_text()  # the same groups, by index

    alone = tmp_path / "alone"  # the FSDP checkpoint, restored by one plain process (no torchrun)
    shutil.copytree(out, alone)
    shutil.rmtree(alone / "final")
    with pytest.raises(WarmstartError, match="written by 2 processes with a global batch of 8"):
        pretrain_fn(None, None, {}, [], resume=str(alone))  # 1 process x batch 4: another data position
    result = pretrain_fn(None, None, {"train": {"batch_size": 8}}, [], resume=str(alone))
    assert result["step"] == 24
    final, restored = weights(out / "final"), weights(alone / "final")
    assert all(final[k].equal(restored[k]) for k in final)


def test_finetune_on_two_processes_equals_one_with_the_doubled_batch(runs, tmp_path):
    """193 examples in global batches of 16: the epoch's last batch has 1 row, so one process trains on a
    stand-in row that weighs nothing; the length-grouped order is that of batch 16 either way."""
    common = ["--init", str(runs["one"]), "--dataset", "rotten-tomatoes", "--max-length", "32"]
    common += ["--epochs", "1", "data.train_limit=193", "train.log_every=1", "train.eval_every=4"]
    common += ["train.progress=false", "train.lr=1e-3", "eval_batch_size=128"]
    dirs = {}
    for procs, batch in ((0, 16), (2, 8)):
        dirs[procs] = tmp_path / f"ft{procs}"
        args = ["finetune", "--out", str(dirs[procs]), "--batch-size", str(batch)] + common
        code, err = run(procs, args, tmp_path / f"ft{procs}-log")
        assert code == 0, err
    loss, w = _compare(dirs[0], dirs[2])
    tests = [json.loads((d / "test_metrics.json").read_text())["test"] for d in dirs.values()]
    test_diff = max(abs(tests[0][k] - tests[1][k]) for k in tests[0])
    print(
        f"\nfinetune, 1 process (batch 16) vs 2 (8 each): max loss diff {loss:.2e}, weights {w:.2e}, "
        f"test metrics {test_diff:.2e}"
    )
    assert loss < TOL and w < TOL and test_diff < TOL
    assert len(records(dirs[2], "train")) == 13


def test_accumulation_on_two_processes_equals_it_on_one(runs, small_shards):
    """1 process x 2 micro-batches of 4 = 2 processes x 2 micro-batches of 2 (the same global micro-batches):
    the step's count is summed over micro-batches and processes alike."""
    root = runs["one"].parent
    one, two = root / "one-accum", root / "two-accum"
    for procs, out, batch in ((0, one, 4), (2, two, 2)):
        code, err = pretrain(procs, small_shards, out, batch, "train.grad_accum=2")
        assert code == 0, err
    loss, w = _compare(one, two)
    print(f"\naccumulation 2: 1 process x batch 4 vs 2 x batch 2: max loss diff {loss:.2e}, weights {w:.2e}")
    assert loss < TOL and w < TOL


def test_a_time_budget_ends_both_processes_at_the_first_process_plan(small_shards, runs, tmp_path):
    """train.time_budget under torchrun: the first process plans and both follow (a budget of 0.06 s is spent
    before the plan at step 10, so the plan is step 10); the run ends there whole, with the uninterrupted
    run's losses up to it."""
    out = tmp_path / "held"
    code, err = pretrain(2, small_shards, out, 4, "train.time_budget=0.001")
    assert code == 0, err
    said = (tmp_path / "held-log.out").read_text()
    assert "train.time_budget: 10 of 24 steps fit in 0.001 min" in said
    assert records(out, "budget")[10]["planned_steps"] == 10 and max(records(out, "train")) == 10
    assert (out / "final").is_dir() and (out / "checkpoints" / "step-00000010").is_dir()
    full, held = records(runs["two"], "train"), records(out, "train")
    assert {s: r["loss"] for s, r in held.items()} == {s: full[s]["loss"] for s in range(1, 11)}
