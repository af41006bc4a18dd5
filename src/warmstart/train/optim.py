"""AdamW with no weight decay on biases and normalisation weights."""

import torch
from torch import nn


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "norm" in name.lower() else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def adamw(model: nn.Module, lr: float, weight_decay: float, betas: tuple, eps: float) -> torch.optim.AdamW:
    return torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, betas=betas, eps=eps, foreach=True)
