"""train.time_budget on a toy unit with a clock that moves one second per step: the steps before warmup's end
are those of a run without a budget; then the run plans the steps that fit, decays its learning rate over
them, logs the plan, and a run resumed after planning keeps it."""

import json

import pytest
import torch

from tests.helpers.toys import Toy
from warmstart.errors import WarmstartError
from warmstart.train import time_budget
from warmstart.train.checkpoint import Checkpointer
from warmstart.train.fit import fit
from warmstart.train.loop import TrainConfig
from warmstart.train.schedule import lr_multiplier

BASE = dict(steps=40, lr=0.05, warmup_steps=2, save_every=0, eval_every=0, log_every=1, progress=False,
            device="cpu", report_to=["none"])  # fmt: skip


class Data:
    """Each step's batch moves the clock by one second: the run's pace is exactly 1 s a step."""

    batches_per_epoch = 1000

    def __init__(self, clock):
        self.clock = clock

    def batch(self, i):
        self.clock.now += 1.0
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(i))
        return {"x": x, "y": x.sum(1, keepdim=True), "attention_mask": torch.ones(8, 5, dtype=torch.long)}

    def position(self, i):
        return divmod(i, self.batches_per_epoch)


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


class Boom(Exception):
    pass


def _run(tmp_path, monkeypatch, name, resume=False, hooks=(), **cfg):
    clock = Clock()
    monkeypatch.setattr(time_budget, "clock", clock)
    evals = [Data(Clock()).batch(10_000)]
    out = tmp_path / name
    out.mkdir(exist_ok=True)
    cfg = TrainConfig(**{**BASE, **cfg})
    result = fit(Toy(), Data(clock), evals, cfg, Checkpointer(out, {}), resume, hooks)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return result, records


def _losses(records):
    return {r["step"]: r["loss"] for r in records if r["split"] == "train"}


def test_the_run_plans_the_steps_that_fit_and_decays_over_them(tmp_path, monkeypatch):
    free, free_records = _run(tmp_path, monkeypatch, "free")
    held, records = _run(tmp_path, monkeypatch, "held", time_budget=0.2)  # 12 s at 1 s a step
    assert free["step"] == 40
    assert held["step"] == 12
    plan = [r for r in records if r["split"] == "budget"]
    assert plan == [{"step": 10, "split": "budget", "time": plan[0]["time"], "planned_steps": 12,
                     "asked_steps": 40}]  # fmt: skip
    # up to the plan (the end of the 10 steps the pace is measured over), the runs are the same
    assert [_losses(records)[s] for s in range(1, 11)] == [_losses(free_records)[s] for s in range(1, 11)]
    lrs = {r["step"]: r["lr"] for r in records if r["split"] == "train"}
    assert lrs[12] == pytest.approx(0.05 * lr_multiplier("linear", 2, 12)(11))  # decayed over 12, not 40
    assert lrs[12] < 0.2 * 0.05
    assert lrs[10] == pytest.approx(0.05 * lr_multiplier("linear", 2, 40)(9))  # planned after step 10


class SlowStart(Data):
    """The first step takes 10 s (start-up), every other 1 s."""

    def batch(self, i):
        self.clock.now += 9.0 if i == 0 else 0.0
        return super().batch(i)


class Evaluations:
    """Validation batches whose every pass takes 20 s of the clock."""

    def __init__(self, clock):
        self.clock, self.batches = clock, [Data(Clock()).batch(10_000)]

    def __iter__(self):
        self.clock.now += 20.0
        return iter(self.batches)


def test_a_slow_start_and_evaluations_still_end_within_the_budget(tmp_path, monkeypatch):
    """20 s evaluations (before the first step and after the last) and a 10 s first step: the plan counts
    the last evaluation and measures the pace after the start-up, so the run ends inside its 2 minutes
    and uses most of them."""
    clock = Clock()
    monkeypatch.setattr(time_budget, "clock", clock)
    cfg = TrainConfig(**{**BASE, "steps": 400, "warmup_steps": 20, "eval_every": 200, "time_budget": 2})
    out = tmp_path / "run"
    out.mkdir()
    result = fit(Toy(), SlowStart(clock), Evaluations(clock), cfg, Checkpointer(out, {}))
    assert 20 < result["step"] < 400
    assert 0.8 * 120 <= clock.now <= 120  # the whole run, both evaluations included


def test_a_budget_larger_than_the_steps_changes_nothing(tmp_path, monkeypatch):
    free, free_records = _run(tmp_path, monkeypatch, "free", steps=15)
    held, records = _run(tmp_path, monkeypatch, "held", steps=15, time_budget=10)
    assert held["step"] == free["step"] == 15
    assert [r["planned_steps"] for r in records if r["split"] == "budget"] == [15]
    assert _losses(records) == _losses(free_records)


def test_a_resumed_run_keeps_its_plan(tmp_path, monkeypatch):
    class KillAt11:
        def on_step(self, step, loss):
            if step == 11:
                raise Boom

    with pytest.raises(Boom):
        _run(tmp_path, monkeypatch, "run", hooks=[KillAt11()], time_budget=0.2, save_every=11)
    result, records = _run(tmp_path, monkeypatch, "run", resume=True, time_budget=0.2, save_every=11)
    assert result["step"] == 12  # the plan in the checkpoint, not train.steps (40)
    assert [r["planned_steps"] for r in records if r["split"] == "budget"] == [12]  # planned once


def test_a_negative_budget_is_refused():
    with pytest.raises(WarmstartError, match="train.time_budget must be 0 .off. or more minutes"):
        TrainConfig(time_budget=-1)
