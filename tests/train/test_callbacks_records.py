"""The callbacks of the fit loop (train/callbacks.py) on a toy unit: step 0's evaluation reaches
``on_evaluate``, ``on_log`` gets the step's full record beside ``on_step(step, loss)``, ``on_train_end`` the
loop's result, ``tokens_seen`` carries across a resume, and StopTraining from step 0's evaluation or from
``on_log`` ends the run."""

import json

import pytest
import torch

from tests.helpers.toys import Toy
from warmstart.train.callbacks import StopTraining, callbacks
from warmstart.train.checkpoint import Checkpointer
from warmstart.train.fit import fit
from warmstart.train.loop import TrainConfig

BASE = dict(steps=6, lr=0.05, save_every=2, eval_every=3, log_every=1, progress=False, device="cpu",
            warmup_steps=2, grad_accum=2)  # fmt: skip


class Data:
    batches_per_epoch = 4  # micro-batches per pass: step 2 (4 micro-batches at grad_accum 2) ends epoch 1

    def batch(self, i):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(i))
        return {"x": x, "y": x.sum(1, keepdim=True), "attention_mask": torch.ones(8, 5, dtype=torch.long)}

    def position(self, i):
        return divmod(i, self.batches_per_epoch)


class Everything:
    def __init__(self, stop_at_log=None, stop_at_start=False):
        self.calls, self.stop_at_log, self.stop_at_start = [], stop_at_log, stop_at_start

    def on_step(self, step, loss):
        self.calls.append(("step", step, loss))

    def on_log(self, step, record):
        self.calls.append(("log", step, record))
        if step == self.stop_at_log:
            raise StopTraining("enough")

    def on_evaluate(self, step, metrics):
        self.calls.append(("evaluate", step, metrics))
        if step == 0 and self.stop_at_start:
            raise StopTraining("the start is good enough")

    def on_save(self, step, path):
        self.calls.append(("save", step, str(path)))

    def on_train_end(self, result):
        self.calls.append(("end", None, result))

    def of(self, kind):
        return [(step, x) for k, step, x in self.calls if k == kind]


def train(run_dir, hooks, resume=False, **options):
    cfg = TrainConfig(**{**BASE, **options})
    return fit(Toy(), Data(), [Data().batch(100)], cfg, Checkpointer(run_dir, {}), resume=resume, hooks=hooks)


def test_every_callback_sees_its_part_of_the_run(tmp_path):
    seen = Everything()
    result = train(tmp_path, [seen])
    evaluations = seen.of("evaluate")
    assert [s for s, _ in evaluations] == [0, 3, 6]  # step 0's evaluation too
    logged = [json.loads(x) for x in open(tmp_path / "metrics.jsonl")]
    start = next(r for r in logged if r["split"] == "validation" and r["step"] == 0)
    assert evaluations[0][1]["loss"] == pytest.approx(start["loss"])
    steps, logs = seen.of("step"), seen.of("log")
    assert [s for s, _ in steps] == [s for s, _ in logs] == [1, 2, 3, 4, 5, 6]
    for (step, loss), (_, record) in zip(steps, logs):
        assert set(record) == {"step", "loss", "lr", "epoch", "tokens_seen", "grad_norm"}
        assert record["step"] == step and record["loss"] == loss
        assert record["tokens_seen"] == step * 2 * 8 * 5  # 2 micro-batches of 8 rows x 5 tokens per step
        assert record["epoch"] == pytest.approx(step * 2 / 4)
        assert record["grad_norm"] > 0
    train_lr = {r["step"]: r["lr"] for r in logged if r["split"] == "train"}
    assert [r["lr"] for _, r in logs] == [train_lr[s] for s in range(1, 7)]  # the logged schedule
    assert logs[0][1]["lr"] == pytest.approx(0.025)  # half way through 2 warmup steps
    (end,) = seen.of("end")
    assert end[1] == result and end[1]["step"] == 6
    assert seen.calls[-1][0] == "end"  # after the last checkpoint
    assert [s for s, _ in seen.of("save")] == [2, 4, 6]


def test_tokens_seen_carries_across_a_resume(tmp_path):
    class Cut(Exception):
        pass

    def cut(step, loss):
        if step == 4:
            raise Cut

    with pytest.raises(Cut):
        train(tmp_path, [cut])
    seen = Everything()
    train(tmp_path, [seen], resume=True)  # from the step-4 checkpoint
    assert [(s, r["tokens_seen"]) for s, r in seen.of("log")] == [(5, 400), (6, 480)]


def test_stop_training_from_on_log_and_from_the_start(tmp_path):
    seen = Everything(stop_at_log=2)
    result = train(tmp_path / "log", [seen])
    assert result["step"] == 2 and result["stopped_early"]
    assert [s for s, _ in seen.of("step")] == [1, 2]  # on_step still saw the step on_log stopped at
    started = Everything(stop_at_start=True)
    result = train(tmp_path / "start", [started])
    assert result["step"] == 1 and result["stopped_early"]  # honoured after the first step
    stop = [json.loads(x) for x in open(tmp_path / "start" / "metrics.jsonl") if '"stop"' in x]
    assert stop[0]["reason"] == "the start is good enough"


def test_a_plain_function_is_still_on_step_and_a_stranger_is_refused():
    def fn(step, loss):
        return None

    (wrapped,) = callbacks([fn])
    assert wrapped.on_step is fn and not hasattr(wrapped, "on_log")
    with pytest.raises(TypeError, match="on_log"):
        callbacks([object()])
