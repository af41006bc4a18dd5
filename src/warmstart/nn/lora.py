"""LoRA (Hu et al., 2021): a frozen linear layer plus a trainable low-rank update, ``W x + (alpha/r) B A x``.

``A`` (r x in) starts kaiming-uniform and ``B`` (out x r) starts at zero, as in the paper and peft, so a
freshly wrapped layer computes exactly what the base layer computed. Dropout acts on the adapter's input only.

The fused ``qkv`` projection of ``nn.attention.SelfAttention`` gets ONE adapter over its 3*hidden output:
``B`` is (3H x r) and ``A`` (r x H) is shared by q, k and v. Separate rank-r adapters on q, k and v (peft on
Hugging Face BERT) equal a fused adapter of rank 3r whose ``B`` is block-diagonal, so the two agree only
when the ranks add up and ``B`` has that block structure. We keep the single fused adapter because it is
simple; note that at the same ``r`` it has fewer parameters (4rH instead of 6rH).

``merge_lora`` folds the update into a plain ``nn.Linear``; the merged model has the plain model's state
dict names (``layers.0.attn.qkv.weight``) and loads into a model that never had adapters.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.nn.dropout import Dropout


class LoRALinear(nn.Module):
    """``base(x) + scale * B(A(dropout(x)))`` with ``base`` frozen and ``scale = alpha / rank``."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, dropout: float = 0.0):
        super().__init__()
        if rank < 1:
            raise ValueError(f"LoRA rank must be at least 1, got {rank}")
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        kw = {"device": base.weight.device, "dtype": base.weight.dtype}
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, **kw))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, **kw))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))  # nn.Linear's default, as peft does
        self.rank, self.alpha, self.scale = rank, alpha, alpha / rank
        self.drop = Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + F.linear(F.linear(self.drop(x), self.lora_a), self.lora_b) * self.scale

    def merged(self) -> nn.Linear:
        """A plain ``nn.Linear`` computing the same function (in eval mode): ``W + scale * B @ A``."""
        base = self.base
        out = nn.Linear(
            base.in_features,
            base.out_features,
            bias=base.bias is not None,
            device=base.weight.device,
            dtype=base.weight.dtype,
        )
        with torch.no_grad():
            delta = (self.lora_b.float() @ self.lora_a.float()) * self.scale
            out.weight.copy_((base.weight.float() + delta).to(base.weight.dtype))
            if base.bias is not None:
                out.bias.copy_(base.bias)
        # keep the base's trainable flags: a merged model is for export and inference, frozen as it was
        out.weight.requires_grad_(base.weight.requires_grad)
        if base.bias is not None:
            out.bias.requires_grad_(base.bias.requires_grad)
        return out

    def extra_repr(self) -> str:
        return f"rank={self.rank}, alpha={self.alpha}"


def _replace(module: nn.Module, pick) -> int:
    """Replace each child ``c`` (anywhere below ``module``) for which ``pick(name, c)`` returns a module."""
    swaps = []
    for parent in module.modules():
        for name, child in parent.named_children():
            new = pick(name, child)
            if new is not None:
                swaps.append((parent, name, new))
    for parent, name, new in swaps:  # after the walk: never change a module tree while iterating over it
        setattr(parent, name, new)
    return len(swaps)


def add_lora(module: nn.Module, targets: list[str], rank: int, alpha: float, dropout: float = 0.0) -> int:
    """Wrap every ``nn.Linear`` child whose attribute name is in ``targets`` in a ``LoRALinear``, in place.

    Returns how many layers were wrapped. Layers already wrapped are left alone (their ``base`` is named
    ``base``, not a target), so calling it twice adds nothing.
    """
    wanted = set(targets)

    def pick(name, child):
        if name in wanted and type(child) is nn.Linear:
            return LoRALinear(child, rank, alpha, dropout)
        return None

    return _replace(module, pick)


def merge_lora(module: nn.Module) -> int:
    """Replace every ``LoRALinear`` below ``module`` by its merged ``nn.Linear``; returns how many."""
    return _replace(module, lambda name, child: child.merged() if isinstance(child, LoRALinear) else None)
