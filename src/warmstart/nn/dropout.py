"""Dropout whose CPU mask costs a quarter of ``torch.bernoulli_``'s.

On the CPU, drawing dropout masks with ``bernoulli_`` took about a quarter of a small BERT's bf16 training
step (profiled on 2 cores). Here each mask element is one 16-bit draw: ``random_()`` on int32 gives 31 random
bits per element (low 16 uniform, high 15 uniform), read as two int16 halves and compared with a threshold
per half, so a value is dropped with probability ``round(p * 32768) / 32768`` (p = 0.1 -> 0.100006) and the
kept ones are scaled by the inverse of the kept share. The draws come from torch's default generator, so
``torch.manual_seed`` and checkpointed RNG state make runs reproducible and resumable. Off the CPU (CUDA),
``F.dropout`` is used as it is.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from torch import nn

_STEPS = 32768


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """``x`` with each element zeroed with probability ~``p`` (see above), the rest scaled up."""
    if not training or p == 0:
        return x
    if x.device.type != "cpu" or not 0 < p < 1 or sys.byteorder != "little":
        return F.dropout(x, p, training)
    q = max(1, min(_STEPS - 1, round(p * _STEPS)))
    n = x.numel()
    bits = torch.empty((n + 1) // 2, dtype=torch.int32).random_().view(torch.int16).view(-1, 2)
    # little-endian: the low (uniform 16-bit) half first, the high (15-bit, non-negative) half second
    thresholds = torch.tensor([2 * q - _STEPS, q], dtype=torch.int16)
    keep = (bits >= thresholds).view(-1)[:n].view(x.shape)
    return torch.where(keep, x * (_STEPS / (_STEPS - q)), 0)


class Dropout(nn.Dropout):
    """``nn.Dropout`` with the fast CPU mask (an ``nn.Dropout``, so code that finds dropouts still does)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)
