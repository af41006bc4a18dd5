"""NaN/inf guard and gradient-spike log of the fit loop: a toy unit whose loss is NaN on chosen batches,
and a real pretraining whose unit returns NaN on chosen steps."""

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.runs import pretrain_argv
from warmstart.cli.main import main
from warmstart.errors import WarmstartError
from warmstart.registry import OBJECTIVES
from warmstart.train.checkpoint import Checkpointer
from warmstart.train.fit import fit
from warmstart.train.logging import read_metrics
from warmstart.train.loop import TrainConfig

BASE = dict(steps=8, lr=0.05, save_every=2, eval_every=0, log_every=1, progress=False, device="cpu")


class Toy(torch.nn.Module):
    """Linear regression; the loss is NaN on a batch marked bad, scaled on a batch marked for a spike."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.w = torch.nn.Linear(4, 1)

    def forward(self, batch):
        loss = ((self.w(batch["input_ids"]) - batch["y"]) ** 2).mean() * batch["scale"]
        if batch["bad"]:
            loss = loss * float("nan")
        return loss, {"loss": (float(loss.detach()), 1)}


class Data:
    """Micro-batch i (that of step i + 1): a pure function of i, so skips are too."""

    def __init__(self, bad=(), spike=()):
        self.bad, self.spike = set(bad), set(spike)

    def batch(self, i):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(i))
        scale = 1e4 if i + 1 in self.spike else 1.0
        return {"input_ids": x, "y": x.sum(1, keepdim=True), "bad": i + 1 in self.bad, "scale": scale}

    def position(self, i):
        return i // 10, i % 10


def train(run_dir, data, hooks=(), resume=False, **options):
    """fit() of the toy; (its weights after each step, fit's result)."""
    unit, taken = Toy(), {}

    def snapshot(step, loss):
        taken[step] = {k: v.clone() for k, v in unit.state_dict().items()}

    cfg = TrainConfig(**{**BASE, "eval_at_start": False, **options})
    ckpt = Checkpointer(run_dir, {})
    return taken, fit(unit, data, [Data().batch(100)], cfg, ckpt, resume=resume, hooks=[snapshot, *hooks])


def same(a, b):
    return a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)


def test_nan_steps_are_skipped_without_an_update(tmp_path):
    taken, result = train(tmp_path, Data(bad=[3, 5]), max_bad_steps=2)
    assert result["step"] == 8 and result["bad_steps"] == 2
    assert same(taken[3], taken[2]) and same(taken[5], taken[4])  # skipped: no change
    assert not same(taken[4], taken[3]) and not same(taken[6], taken[5])  # good steps update
    bad = [(r["step"], r["bad_steps"], r["problem"]) for r in read_metrics(tmp_path, "bad_step")]
    assert bad == [(3, 1, "loss nan"), (5, 2, "loss nan")]
    assert [r["step"] for r in read_metrics(tmp_path, "train")] == [1, 2, 4, 6, 7, 8]
    last = tmp_path / "checkpoints" / "step-00000008" / "trainer"
    assert json.loads((last / "state.json").read_text())["bad_steps"] == 2
    assert float(load_file(str(last / "optimizer.safetensors"))["0.step"]) == 6  # 6 updates in 8 steps


def test_past_max_bad_steps_the_run_stops_naming_the_step_and_the_last_good_checkpoint(tmp_path):
    with pytest.raises(WarmstartError) as info:
        train(tmp_path, Data(bad=[3, 5]), max_bad_steps=1)
    good = tmp_path / "checkpoints" / "step-00000004"
    message = str(info.value)
    limit = "loss nan at step 5, bad step 2 (more than train.max_bad_steps=1)"
    assert message.startswith(f"{limit}; stopped, last good checkpoint {good};")
    assert "--resume" in message and "\n" not in message and not (tmp_path / "final").exists()
    Toy().load_state_dict(load_file(str(good / "model.safetensors")))  # intact and loadable


def test_max_bad_steps_0_stops_at_the_first(tmp_path):
    with pytest.raises(WarmstartError, match=r"loss nan at step 3, bad step 1 .*no checkpoint yet"):
        train(tmp_path, Data(bad=[3]), max_bad_steps=0, save_every=4)


def test_resume_across_skipped_steps_is_exact(tmp_path):
    class Cut(Exception):
        pass

    def cut(step, loss):
        if step == 5:
            raise Cut

    data = Data(bad=[3, 6])
    train(tmp_path / "full", data)
    with pytest.raises(Cut):
        train(tmp_path / "cut", data, hooks=[cut])
    _, resumed = train(tmp_path / "cut", data, resume=True)  # from step 4, one skip already counted
    assert resumed["step"] == 8
    a, b = (load_file(str(d / "final" / "model.safetensors")) for d in (tmp_path / "full", tmp_path / "cut"))
    assert same(a, b)
    runs = (tmp_path / "full", tmp_path / "cut")
    logs = [[(r["step"], r["bad_steps"]) for r in read_metrics(d, "bad_step")] for d in runs]
    assert logs == [[(3, 1), (6, 2)]] * 2


def test_a_gradient_norm_spike_is_logged(tmp_path):
    train(tmp_path, Data(spike=[14]), steps=16, save_every=0)
    spikes = read_metrics(tmp_path, "grad_spike")
    assert [r["step"] for r in spikes] == [14] and spikes[0]["ratio"] > 10


@pytest.mark.parametrize("key, value", [("max_bad_steps", -1), ("spike_factor", 0.5), ("spike_factor", -2.0)])
def test_guard_options_are_range_checked(key, value):
    with pytest.raises(WarmstartError, match=f"train.{key} must be"):
        TrainConfig(**{key: value})


def test_pretraining_with_nan_on_steps_3_and_5_stops_past_the_limit(
    small_shards, tmp_path, monkeypatch, capsys
):
    forward, calls = OBJECTIVES["mlm"].forward, []

    def nan_on_steps_3_and_5(self, batch):
        loss, stats = forward(self, batch)
        if self.training:  # one call per step (grad_accum is 2 here: count micro-batches)
            calls.append(1)
            if (len(calls) + 1) // 2 in (3, 5):
                loss = loss * float("nan")
        return loss, stats

    monkeypatch.setattr(OBJECTIVES["mlm"], "forward", nan_on_steps_3_and_5)
    out = tmp_path / "run"
    assert main(pretrain_argv(small_shards, out, "train.max_bad_steps=1")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"error: loss nan at step 5, bad step 2 (more than train.max_bad_steps=1); "
        f"stopped, last good checkpoint {out / 'checkpoints' / 'step-00000004'};"
    ), err
    assert [r["step"] for r in read_metrics(out, "bad_step")] == [3, 5]  # the stopping one logged too


def test_weights_broken_by_an_update_are_never_written(tmp_path):
    """An update that leaves a weight infinite (here forced right after step 3's update and its hooks):
    the next step's loss is NaN, and skipping cannot mend the weights, so the run stops at once, naming
    the last good checkpoint, and neither a checkpoint nor RUN/final holds the broken weights."""

    unit = Toy()

    def poison(step, loss):
        if step == 3:
            with torch.no_grad():
                unit.w.weight[0, 0] = float("inf")

    cfg = TrainConfig(**{**BASE, "eval_at_start": False})
    with pytest.raises(WarmstartError) as err:
        fit(unit, Data(), [Data().batch(100)], cfg, Checkpointer(tmp_path, {}), hooks=[poison])
    line = str(err.value)
    assert "no longer finite at step 4" in line and "w.weight" in line and "step-00000002" in line
    steps = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert steps == ["step-00000002"] and not (tmp_path / "final").exists()
    assert all(
        torch.isfinite(t).all()
        for t in load_file(str(tmp_path / "checkpoints" / steps[0] / "model.safetensors")).values()
    )


def test_a_learning_rate_above_one_is_refused():
    with pytest.raises(WarmstartError, match=r"train.lr must be in \[0, 1\]"):
        TrainConfig(lr=10.0)


def test_with_rollback_an_update_that_breaks_a_weight_is_undone(tmp_path):
    """train.rollback: the update of step 3 (made to overflow a weight, as a huge step would) is rolled back,
    weights and Adam state, and counted as a bad step; the run goes on and ends with finite weights."""
    unit = Toy()
    cfg = TrainConfig(**{**BASE, "eval_at_start": False, "rollback": True})
    taken = {}

    def snapshot(step, loss):
        taken[step] = {k: v.clone() for k, v in unit.state_dict().items()}

    ckpt = Checkpointer(tmp_path, {})
    real_step = torch.optim.AdamW.step

    def overflowing(self, *args, **kwargs):
        out = real_step(self, *args, **kwargs)
        if len(taken) == 2:  # the third update
            with torch.no_grad():
                unit.w.bias.fill_(float("inf"))
        return out

    torch.optim.AdamW.step = overflowing
    try:
        result = fit(unit, Data(), [Data().batch(100)], cfg, ckpt, hooks=[snapshot])
    finally:
        torch.optim.AdamW.step = real_step
    assert result["step"] == 8 and result["bad_steps"] == 1
    assert same(taken[3], taken[2]) and not same(taken[4], taken[3])  # undone, then training went on
    bad = read_metrics(tmp_path, "bad_step")
    assert [(r["step"], r["problem"]) for r in bad] == [
        (3, "w.bias non-finite after the update (rolled back)")
    ]
    final = load_file(str(tmp_path / "final" / "model.safetensors"))
    assert all(torch.isfinite(t).all() for t in final.values())
    skipped, _ = train(tmp_path / "skip", Data(bad=[3]))  # the same step skipped by the NaN guard instead
    assert all(same(taken[k], skipped[k]) for k in taken)  # Adam's state came back too: the same run
