"""AdamW param groups: no decay on biases and norms, trainable parameters only, LR scales, a fixed order."""

import torch
from torch import nn

from warmstart.train.optim import adamw, param_groups


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.low = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.high = nn.Linear(4, 2)


def names(model, group) -> list[str]:
    by_id = {id(p): n for n, p in model.named_parameters()}
    return [by_id[id(p)] for p in group["params"]]


def test_default_groups_are_decay_then_no_decay_with_scale_one():
    model = Tiny()
    groups = param_groups(model, 0.1)
    assert [names(model, g) for g in groups] == [
        ["low.weight", "high.weight"],
        ["low.bias", "norm.weight", "norm.bias", "high.bias"],
    ]
    assert [g["weight_decay"] for g in groups] == [0.1, 0.0]
    assert [g["lr_scale"] for g in groups] == [1.0, 1.0]


def test_frozen_parameters_never_reach_the_optimizer():
    model = Tiny()
    model.low.requires_grad_(False)
    optimizer = adamw(model, 1e-3, 0.1, (0.9, 0.999), 1e-8)
    inside = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert inside == {id(p) for p in model.parameters() if p.requires_grad}
    assert id(model.low.weight) not in inside


def test_scaled_groups_are_ordered_and_carry_their_lr():
    model = Tiny()
    scales = {"low.weight": 0.25, "low.bias": 0.25, "norm.weight": 0.5, "norm.bias": 0.5}
    optimizer = adamw(model, 2e-3, 0.1, (0.9, 0.999), 1e-8, lr_scales=scales)
    groups = optimizer.param_groups
    assert [(g["lr_scale"], g["weight_decay"]) for g in groups] == [
        (1.0, 0.1),
        (1.0, 0.0),
        (0.5, 0.0),
        (0.25, 0.1),
        (0.25, 0.0),
    ]
    assert [names(model, g) for g in groups] == [
        ["high.weight"],
        ["high.bias"],
        ["norm.weight", "norm.bias"],
        ["low.weight"],
        ["low.bias"],
    ]
    assert [g["lr"] for g in groups] == [2e-3, 2e-3, 1e-3, 5e-4, 5e-4]
    again = adamw(Tiny(), 2e-3, 0.1, (0.9, 0.999), 1e-8, lr_scales=scales)
    assert [len(g["params"]) for g in again.param_groups] == [len(g["params"]) for g in groups]


def test_optimizer_state_round_trips_by_group_order():
    torch.manual_seed(0)
    model = Tiny()
    scales = {"low.weight": 0.5}
    optimizer = adamw(model, 1e-2, 0.1, (0.9, 0.999), 1e-8, lr_scales=scales)
    model.high(model.norm(model.low(torch.randn(3, 4)))).sum().backward()
    optimizer.step()
    twin = adamw(model, 1e-2, 0.1, (0.9, 0.999), 1e-8, lr_scales=scales)
    twin.load_state_dict(optimizer.state_dict())
    assert [g["lr_scale"] for g in twin.param_groups] == [g["lr_scale"] for g in optimizer.param_groups]
    for p in model.parameters():
        assert torch.equal(twin.state[p]["exp_avg"], optimizer.state[p]["exp_avg"])
