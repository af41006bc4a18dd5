"""The transformer feed-forward block."""

import torch.nn.functional as F
from torch import nn

from warmstart.nn.dropout import Dropout

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
    """up -> activation -> down. ``gated`` (T5 v1.1, GLU variants): act(gate(x)) * up(x) -> down."""

    def __init__(
        self, hidden: int, inner: int, act: str, dropout: float, bias: bool = True, gated: bool = False
    ):
        super().__init__()
        self.up = nn.Linear(hidden, inner, bias=bias)
        self.gate = nn.Linear(hidden, inner, bias=bias) if gated else None
        self.down = nn.Linear(inner, hidden, bias=bias)
        self.act = activation(act)
        self.drop = Dropout(dropout)

    def forward(self, x):
        h = self.act(self.up(x)) if self.gate is None else self.act(self.gate(x)) * self.up(x)
        return self.drop(self.down(h))
