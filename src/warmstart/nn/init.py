"""Weight initialisation shared by the models (BERT/GPT-2 style: normal(0, std), zero biases, unit norms)."""

import math

import torch
from torch import nn


def init_weights(module: nn.Module, std: float) -> None:
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=std)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


@torch.no_grad()
def sinusoidal_(weight: torch.Tensor, std: float) -> None:
    """Fill a (positions, dim) table with the Transformer's sines and cosines, scaled to standard deviation
    ``std``: a learned table that starts out knowing which positions are near each other."""
    n, dim = weight.shape
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    table = torch.zeros(n, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    weight.copy_((table * (std / table.std())).to(weight.dtype))
