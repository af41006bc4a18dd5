"""Whole runs: the arguments of tiny pretrain, family pretrain and study runs, and `warmstart pretrain` of a
tiny BERT in a subprocess, for the tests that kill or signal it."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from safetensors.torch import load_file

from tests.helpers.shapes import SHAPES, TINY_MODEL
from warmstart.train.checkpoint import step_dirs

STEPS, SAVE_EVERY = 120, 3
OVERRIDES = [
    "model.hidden_size=32",
    "model.num_hidden_layers=2",
    "model.num_attention_heads=2",
    "model.intermediate_size=64",
    "model.max_position_embeddings=64",
    "data.seq_len=32",
    "train.batch_size=8",
    f"train.save_every={SAVE_EVERY}",
    "train.eval_every=10",
    "train.eval_batches=1",
    "train.log_every=1",
    "train.progress=false",
    "train.lr=1e-3",
    "train.seed=3",
]


def start(shards: Path, out: Path, keep_last: int = 2, resume: bool = False, **env) -> subprocess.Popen:
    """The run, fresh (replacing ``out``) or resumed; one CPU thread, so every run computes alike."""
    cmd = [sys.executable, "-m", "warmstart", "pretrain"]
    if resume:
        cmd += ["--resume", str(out)]
    else:
        cmd += ["--shards", str(shards), "--out", str(out), "--overwrite", "--steps", str(STEPS)]
        cmd += OVERRIDES + [f"train.keep_last={keep_last}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **env}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    """(exit code, stderr)."""
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def last_train_step(run: Path, since: float = 0) -> int:
    """The highest step with a train record in RUN/metrics.jsonl, logged at ``since`` (a time.time()) or
    later (records of an earlier, killed process do not count); 0 if none."""
    path = run / "metrics.jsonl"
    steps = [0]
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line being written
        if record.get("split") == "train" and record["time"] >= since:
            steps.append(record["step"])
    return max(steps)


def wait_for(proc: subprocess.Popen, ready, timeout: float = 120) -> bool:
    """Poll ``ready()`` every 2 ms until it holds (True) or the process ends (False)."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.002)
    return True


def latest_checkpoint(run: Path) -> Path | None:
    dirs = step_dirs(run / "checkpoints")
    return dirs[-1][1] if dirs else None


def read_checkpoint(path: Path) -> dict:
    """Every file of a step checkpoint, parsed: a missing or half-written one fails here."""
    trainer = path / "trainer"
    state = json.loads((trainer / "state.json").read_text())
    assert state["step"] == int(path.name.split("-")[1])
    json.loads((path / "config.json").read_text())
    json.loads((trainer / "optimizer.json").read_text())
    assert (path / "tokenizer.json").is_file()
    return {
        "model": load_file(str(path / "model.safetensors")),
        "optimizer": load_file(str(trainer / "optimizer.safetensors")),
        "rng": load_file(str(trainer / "rng.safetensors")),
    }


def same_tensors(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and a[k].equal(b[k]) for k in a)


def final_weights(run: Path) -> dict:
    return load_file(str(run / "final" / "model.safetensors"))


# ------------------------------------------------------------------------------------- in-process runs
def run_args(shards, out):
    """Keyword arguments of ``pretrain``: 16 steps of the tiny BERT, 2 micro-batches of 16 windows of 32
    tokens, a checkpoint every 4 steps (the last 2 kept), seed 3."""
    flags = {"out": str(out), "data": {"shards": str(shards)}, "train": {"steps": 16}}
    overrides = TINY_MODEL + [
        "data.seq_len=32",
        "train.batch_size=16",
        "train.grad_accum=2",
        "train.save_every=4",
        "train.eval_every=4",
        "train.log_every=1",
        "train.keep_last=2",
        "train.eval_batches=2",
        "train.progress=false",
        "train.lr=1e-3",
        "train.seed=3",
    ]
    return dict(preset=None, config_file=None, flags=flags, overrides=overrides)


def pretrain_argv(shards, out, *extra) -> list[str]:
    """The command line of ``run_args``' run (and ``extra`` overrides)."""
    args = run_args(shards, out)
    return [
        "pretrain",
        "--shards",
        str(shards),
        "--out",
        str(out),
        "--steps",
        "16",
        *args["overrides"],
        *extra,
    ]


FAMILY_TRAIN = ["data.seq_len=64", "train.batch_size=8", "train.eval_every=40", "train.eval_batches=3"]
FAMILY_TRAIN += ["train.progress=false", "train.lr=3e-3", "train.save_every=0", "train.warmup_steps=4"]


def pretrain_family(arch, shards, out, steps=40, extra=()):
    """``steps`` of a tiny ``arch`` (gpt2, t5, bart: ``SHAPES``) pretrained with its own objective."""
    from warmstart.commands.pretrain import pretrain

    flags = {"out": str(out), "arch": arch, "data": {"shards": str(shards)}, "train": {"steps": steps}}
    return pretrain(None, None, flags, SHAPES[arch] + FAMILY_TRAIN + list(extra))


STUDY_FAST = [
    "data.train_limit=200",
    "task.max_length=48",
    "train.batch_size=16",
    "train.lr=1e-3",
    "eval_batch_size=256",
]


def study_args(run, out, *extra):
    """`warmstart study RUN` on rotten-tomatoes: fractions 0.1 and 1, seeds 1 and 2, one epoch each."""
    return [
        "study", str(run), "--data", "rotten-tomatoes", "--out", str(out), "--fractions", "0.1,1",
        "--seeds", "1,2", "--epochs", "1", "--min-steps", "0", *STUDY_FAST, *extra,
    ]  # fmt: skip


class Interrupt(Exception):
    """Raised by ``stop_at``'s hook: the run dies there as a kill would leave it (after its checkpoints)."""


def stop_at(step_to_die: int):
    """A fit hook that raises Interrupt after step ``step_to_die``."""

    def hook(step, loss):
        if step == step_to_die:
            raise Interrupt

    return hook


def validation_records(run: Path) -> list[dict]:
    """The validation rows of a run's metrics.jsonl, in order."""
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if r["split"] == "validation"]


def assert_resumes_exactly(args, full: Path, cut: Path, stop: int, steps: int) -> None:
    """A run of ``args(cut)`` (pretrain's keyword arguments) killed after step ``stop`` and resumed ends
    at step ``steps`` with the final weights of the uninterrupted run ``full``, bit for bit."""
    import pytest

    from warmstart.commands.pretrain import pretrain

    with pytest.raises(Interrupt):
        pretrain(**args(cut), hooks=[stop_at(stop)])
    resumed = pretrain(None, None, {}, [], resume=str(cut))
    assert resumed["step"] == steps
    assert same_tensors(final_weights(full), final_weights(cut))
