"""The transformer feed-forward block."""

import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
}


def activation(name: str):
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{name}'; choose one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


class MLP(nn.Module):
    def __init__(self, hidden: int, inner: int, act: str, dropout: float, bias: bool = True):
        super().__init__()
        self.up = nn.Linear(hidden, inner, bias=bias)
        self.down = nn.Linear(inner, hidden, bias=bias)
        self.act = activation(act)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.down(self.act(self.up(x))))
