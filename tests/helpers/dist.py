"""`torchrun --nproc_per_node N -m warmstart ...` (and the same command in one plain process) in a
subprocess, on the CPU with gloo, for the distributed tests. Output goes to files (no pipe can fill up)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

TORCHRUN = str(Path(sys.executable).with_name("torchrun"))
# the marks of a test module that starts torchrun processes
MARKS = [
    pytest.mark.integration,
    pytest.mark.distributed,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or not torch.distributed.is_available(),
        reason="needs Linux (/proc) and torch.distributed",
    ),
]
PRETRAIN = [
    "model.hidden_size=32",
    "model.num_hidden_layers=2",
    "model.num_attention_heads=2",
    "model.intermediate_size=64",
    "model.max_position_embeddings=64",
    "model.hidden_dropout_prob=0",  # no dropout: runs on 1 and 2 processes are comparable
    "model.attention_probs_dropout_prob=0",
    "data.seq_len=32",
    "train.steps=24",
    "train.grad_accum=2",
    "train.save_every=4",
    "train.eval_every=4",
    "train.eval_batches=2",
    "train.log_every=1",
    "train.progress=false",
    "train.lr=1e-3",
    "train.seed=3",
]


def start(procs: int, args: list[str], log: Path) -> subprocess.Popen:
    """``warmstart ARGS`` on ``procs`` torchrun processes (0: one plain process, no torchrun); stdout and
    stderr go to LOG.out and LOG.err."""
    cmd = [sys.executable, "-m", "warmstart"]
    if procs:
        cmd = [TORCHRUN, "--standalone", "--nproc_per_node", str(procs), "-m", "warmstart"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out, err = open(log.with_suffix(".out"), "w"), open(log.with_suffix(".err"), "w")
    with out, err:
        return subprocess.Popen(cmd + args, stdout=out, stderr=err, env=env, start_new_session=True)


def run(procs: int, args: list[str], log: Path, timeout: float = 240) -> tuple[int, str]:
    """(exit code, stderr) of a finished run."""
    proc = start(procs, args, log)
    proc.wait(timeout=timeout)
    return proc.returncode, log.with_suffix(".err").read_text()


def pretrain(procs: int, shards: Path, out: Path, batch: int, *extra: str) -> tuple[int, str]:
    args = ["pretrain", "--shards", str(shards), "--out", str(out), "--overwrite", "--batch-size", str(batch)]
    return run(procs, args + PRETRAIN + list(extra), out.parent / f"{out.name}-log")


def records(run_dir: Path, split: str) -> dict[int, dict]:
    rows = [json.loads(r) for r in (run_dir / "metrics.jsonl").read_text().splitlines()]
    found = {r["step"]: r for r in rows if r["split"] == split}
    assert len(found) == sum(r["split"] == split for r in rows), "a step was logged twice"
    return found


def weights(path: Path) -> dict:
    return load_file(str(path / "model.safetensors"))


def max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def workers(parent: int) -> dict[int, int]:
    """{rank: pid} of the processes torchrun ``parent`` started (read from /proc)."""
    found = {}
    for d in Path("/proc").iterdir():
        try:
            stat = (d / "stat").read_text()
            if d.name.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                env = dict(v.split("=", 1) for v in (d / "environ").read_text().split("\0") if "=" in v)
                if "RANK" in env:
                    found[int(env["RANK"])] = int(d.name)
        except (OSError, ValueError, IndexError):
            continue  # a process that ended meanwhile
    return found


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for its parent counts as gone)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def wait_until(ready, timeout: float, what: str) -> float:
    """Poll ``ready()`` every 10 ms; the seconds it took."""
    t0 = time.monotonic()
    while not ready():
        assert time.monotonic() - t0 < timeout, f"timed out waiting for {what}"
        time.sleep(0.01)
    return time.monotonic() - t0
