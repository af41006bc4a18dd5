"""Exact resume: an interrupted run, resumed, matches an uninterrupted one step for step and bit for bit."""

import json

import pytest
from safetensors.torch import load_file

from tests.helpers.runs import Interrupt, run_args, stop_at
from warmstart.commands.pretrain import pretrain
from warmstart.data.packing import PackedWindows
from warmstart.data.shards import TokenShards

pytestmark = pytest.mark.integration


def losses(run_dir):
    rows = [json.loads(r) for r in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {(r["step"], r["split"]): r["loss"] for r in rows}


def test_resume_mid_second_epoch_is_bitwise_exact(small_shards, tmp_path):
    windows = PackedWindows(TokenShards.open(small_shards, "train"), 32, [2], [3])
    micro_per_epoch = len(windows) // 16
    # the checkpoint we resume from (step 12 = 24 micro-batches) lies inside the second pass over the data
    assert micro_per_epoch < 24 < 2 * micro_per_epoch

    full = pretrain(**run_args(small_shards, tmp_path / "full"))
    with pytest.raises(Interrupt):
        pretrain(**run_args(small_shards, tmp_path / "cut"), hooks=[stop_at(14)])
    cut_dir = tmp_path / "cut"
    assert (cut_dir / "checkpoints" / "step-00000012").is_dir()
    assert not (cut_dir / "final").exists()
    resumed = pretrain(None, None, {}, [], resume=str(cut_dir))

    assert resumed["step"] == full["step"] == 16
    a, b = losses(tmp_path / "full"), losses(cut_dir)
    assert a.keys() == b.keys()  # steps 13-14 of the interrupted run were dropped, then rewritten once
    assert a == b  # every logged train and validation loss identical
    wa = load_file(str(tmp_path / "full" / "final" / "model.safetensors"))
    wb = load_file(str(cut_dir / "final" / "model.safetensors"))
    assert wa.keys() == wb.keys()
    assert all(wa[k].equal(wb[k]) for k in wa)
    state = json.loads((cut_dir / "checkpoints" / "step-00000016" / "trainer" / "state.json").read_text())
    assert state["epoch"] == 16 * 2 // micro_per_epoch


def test_keeps_last_k_checkpoints_and_the_best(small_shards, tmp_path):
    pretrain(**run_args(small_shards, tmp_path / "run"))
    kept = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert kept == ["step-00000012", "step-00000016"]
    best = json.loads((tmp_path / "run" / "best" / "best.json").read_text())
    val = [json.loads(r) for r in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in val if r["split"] == "validation" and r["step"] > 0]
    assert best["value"] == min(r["loss"] for r in val)
    assert (tmp_path / "run" / "tb").is_dir() and any((tmp_path / "run" / "tb").iterdir())


def test_optimizer_state_of_other_parameters_is_one_clear_error():
    """A checkpoint whose optimizer trained other parameters (an older version, other settings) is refused
    with a line naming --init, not a traceback from torch."""
    import torch

    from warmstart.errors import WarmstartError
    from warmstart.train.checkpoint import load_optimizer_state, optimizer_state

    a, b, bias = (torch.nn.Parameter(torch.randn(3)) for _ in range(3))
    old = torch.optim.AdamW([a, b])
    (a.sum() + b.sum()).backward()
    old.step()
    tensors, meta = optimizer_state(old)
    with pytest.raises(WarmstartError, match="--init instead of --resume"):
        load_optimizer_state(torch.optim.AdamW([a, b, bias]), tensors, meta)
    load_optimizer_state(torch.optim.AdamW([a, b]), tensors, meta)  # the same parameters still load
