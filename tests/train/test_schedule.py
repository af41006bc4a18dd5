"""Learning-rate schedules: warmup, then linear, cosine, constant or warmup-stable-decay, as the trainer
applies them (the logged rate of a real run equals peak x multiplier at every step)."""

import json
import math

import pytest

from tests.helpers.shapes import TINY_MODEL
from warmstart.commands.pretrain import pretrain
from warmstart.errors import WarmstartError
from warmstart.train.schedule import lr_multiplier


def curve(name, warmup=10, total=110, floor=0.0, decay_ratio=0.2):
    f = lr_multiplier(name, warmup, total, floor, decay_ratio)
    return [f(s) for s in range(total + 1)]


@pytest.mark.parametrize("name", ["linear", "cosine", "constant", "wsd"])
def test_warmup_ramps_to_the_peak(name):
    c = curve(name)
    assert c[:10] == pytest.approx([(s + 1) / 10 for s in range(10)])
    assert c[10] == pytest.approx(1.0)


def test_linear_is_the_triangle_and_cosine_the_half_wave():
    lin, cos = curve("linear"), curve("cosine")
    for s in (10, 35, 60, 85, 110):  # progress after warmup: 0, 1/4, 1/2, 3/4, 1
        p = (s - 10) / 100
        assert lin[s] == pytest.approx(1 - p)
        assert cos[s] == pytest.approx(0.5 * (1 + math.cos(math.pi * p)))
    assert curve("constant")[10:] == [1.0] * 101


def test_wsd_holds_the_peak_then_decays_over_the_last_fraction():
    c = curve("wsd", decay_ratio=0.2)
    assert c[10:91] == [1.0] * 81  # stable until 80% of the post-warmup steps
    assert c[100] == pytest.approx(0.5)  # half-way down the decay
    assert c[110] == pytest.approx(0.0)
    assert all(a >= b for a, b in zip(c[10:], c[11:]))
    floored = curve("wsd", floor=0.1, decay_ratio=0.5)
    assert floored[60] == 1.0 and floored[85] == pytest.approx(0.55) and floored[110] == pytest.approx(0.1)
    assert curve("wsd", decay_ratio=1.0) == pytest.approx(curve("linear"))


@pytest.mark.parametrize("ratio", [0.0, -0.1, 1.5])
def test_wsd_refuses_a_decay_ratio_outside_zero_one(ratio):
    with pytest.raises(WarmstartError, match="decay_ratio"):
        lr_multiplier("wsd", 0, 10, 0.0, ratio)


def test_unknown_schedule_names_the_choices():
    with pytest.raises(WarmstartError, match="linear, cosine, constant, wsd"):
        lr_multiplier("onecycle", 0, 10)


def test_the_trainer_logs_the_wsd_rate_at_every_step(small_shards, tmp_path):
    flags = {"out": str(tmp_path / "run"), "data": {"shards": str(small_shards)}, "train": {"steps": 12}}
    overrides = TINY_MODEL + [
        "data.seq_len=32",
        "train.batch_size=8",
        "train.log_every=1",
        "train.eval_every=0",
        "train.save_every=0",
        "train.progress=false",
        "train.lr=2e-3",
        "train.warmup_steps=2",
        "train.schedule=wsd",
        "train.decay_ratio=0.5",
    ]
    pretrain("bert-tiny", None, flags, overrides)
    rows = [json.loads(r) for r in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    logged = {r["step"]: r["lr"] for r in rows if r["split"] == "train"}
    f = lr_multiplier("wsd", 2, 12, 0.0, 0.5)
    assert len(logged) == 12
    # the rate logged at step s is the one its update used: step s - 1 of the schedule
    assert [logged[s] for s in sorted(logged)] == pytest.approx([2e-3 * f(s - 1) for s in sorted(logged)])
