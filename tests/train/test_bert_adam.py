"""BERTAdam (train.adam_bias_correction=false): Adam without bias correction, as BERT's original code."""

import copy
import json
import math

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from tests.helpers.runs import Interrupt, run_args, stop_at
from warmstart.commands.pretrain import pretrain
from warmstart.train.optim import BertAdam, adamw


def tiny() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 4), nn.LayerNorm(4), nn.Linear(4, 3))


def step(model, optimizer, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    optimizer.zero_grad()
    model(torch.randn(7, 5, generator=g)).pow(2).sum().backward()
    optimizer.step()


def reference(model, steps: int, lr: float, wd: float, betas, eps) -> dict:
    """The update of BERT's AdamWeightDecayOptimizer written out per parameter, in float64."""
    params = {n: p.detach().double().clone() for n, p in model.named_parameters()}
    m = {n: torch.zeros_like(p) for n, p in params.items()}
    v = {n: torch.zeros_like(p) for n, p in params.items()}
    for seed in range(steps):
        work = tiny()
        work.load_state_dict({n: p.float() for n, p in params.items()})
        g = torch.Generator().manual_seed(seed)
        work(torch.randn(7, 5, generator=g)).pow(2).sum().backward()
        for n, p in work.named_parameters():
            grad = p.grad.double()
            m[n] = betas[0] * m[n] + (1 - betas[0]) * grad
            v[n] = betas[1] * v[n] + (1 - betas[1]) * grad * grad
            update = m[n] / (v[n].sqrt() + eps)
            if p.ndim >= 2 and "norm" not in n:  # biases and norms are not decayed
                update = update + wd * params[n]
            params[n] = params[n] - lr * update
    return params


def test_updates_equal_berts_formula_step_for_step():
    model = tiny()
    start = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer = adamw(model, 1e-2, 0.1, (0.9, 0.999), 1e-6, bias_correction=False)
    assert isinstance(optimizer, BertAdam)
    for seed in range(6):
        step(model, optimizer, seed)
    fresh = tiny()
    fresh.load_state_dict(start)
    want = reference(fresh, 6, 1e-2, 0.1, (0.9, 0.999), 1e-6)
    for n, p in model.named_parameters():
        assert torch.allclose(p.double(), want[n], atol=1e-6), n
        assert not torch.equal(p, start[n])


def test_first_step_is_adams_times_one_minus_beta1_over_root_one_minus_beta2():
    """Adam's bias correction shrinks the first step by sqrt(1 - b2) / (1 - b1) = 0.316 (Mosbach et al.)."""
    moved = {}
    for correction in (True, False):
        model = tiny()
        before = [p.detach().clone() for p in model.parameters()]
        step(model, adamw(model, 1e-3, 0.0, (0.9, 0.999), 1e-12, bias_correction=correction), 0)
        moved[correction] = torch.cat([(p - b).abs().flatten() for p, b in zip(model.parameters(), before)])
    nonzero = moved[True] > 0
    ratio = moved[False][nonzero] / moved[True][nonzero]
    assert ratio.mean().item() == pytest.approx(0.1 / math.sqrt(0.001), rel=1e-3)


def test_state_round_trips_and_resumes_the_same_update():
    model = tiny()
    optimizer = adamw(model, 1e-2, 0.1, (0.9, 0.999), 1e-6, bias_correction=False)
    step(model, optimizer, 0)
    twin_model = tiny()
    twin_model.load_state_dict(model.state_dict())
    twin = adamw(twin_model, 1e-2, 0.1, (0.9, 0.999), 1e-6, bias_correction=False)
    twin.load_state_dict(copy.deepcopy(optimizer.state_dict()))  # as from a file: no shared tensors
    step(model, optimizer, 1)
    step(twin_model, twin, 1)
    for a, b in zip(model.parameters(), twin_model.parameters()):
        assert torch.equal(a, b)


def test_pretraining_with_bertadam_resumes_bit_for_bit(small_shards, tmp_path):
    def args(out):
        a = run_args(small_shards, out)
        return {**a, "overrides": [*a["overrides"], "train.adam_bias_correction=false"]}

    full = pretrain(**args(tmp_path / "full"))
    with pytest.raises(Interrupt):
        pretrain(**args(tmp_path / "cut"), hooks=[stop_at(10)])
    resumed = pretrain(None, None, {}, [], resume=str(tmp_path / "cut"))
    assert resumed["step"] == full["step"] == 16
    wa = load_file(str(tmp_path / "full" / "final" / "model.safetensors"))
    wb = load_file(str(tmp_path / "cut" / "final" / "model.safetensors"))
    assert all(wa[k].equal(wb[k]) for k in wa)
    config = (tmp_path / "cut" / "config.yaml").read_text()
    assert "adam_bias_correction: false" in config
    adamw_run = pretrain(**run_args(small_shards, tmp_path / "adamw"))
    losses = [json.loads(r)["loss"] for r in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    assert adamw_run["step"] == 16 and losses  # the same run with bias correction differs in its weights:
    wc = load_file(str(tmp_path / "adamw" / "final" / "model.safetensors"))
    assert not all(wa[k].equal(wc[k]) for k in wa)
