"""One transformer block for decoders and encoder-decoders: self-attention, optional cross-attention, MLP.

Pre-LN (GPT-2, T5: ``x + f(norm(x))``) or post-LN (BART: ``norm(x + f(x))``); LayerNorm or RMSNorm (T5);
projections with or without bias. Each sub-layer's output passes dropout before the residual sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from warmstart.nn.attention import Attention
from warmstart.nn.dropout import Dropout
from warmstart.nn.mlp import MLP
from warmstart.nn.rms_norm import RMSNorm


@dataclass(frozen=True)
class BlockSpec:
    hidden: int
    heads: int
    inner: int
    act: str
    dropout: float
    attn_dropout: float
    eps: float
    pre_ln: bool = True
    rms_norm: bool = False
    bias: bool = True
    cross: bool = False
    head_dim: int | None = None
    scale: float | None = None
    gated: bool = False


def cache_length(past) -> int:
    """Positions held by a KV cache (a list of per-block ``present``), 0 for none."""
    return past[0][0][0].shape[2] if past else 0


def norm(spec: BlockSpec) -> nn.Module:
    if spec.rms_norm:
        return RMSNorm(spec.hidden, eps=spec.eps)
    return nn.LayerNorm(spec.hidden, eps=spec.eps)


class Block(nn.Module):
    def __init__(self, s: BlockSpec):
        super().__init__()
        self.pre_ln = s.pre_ln
        kw = dict(bias=s.bias, head_dim=s.head_dim, scale=s.scale)
        self.attn = Attention(s.hidden, s.heads, s.attn_dropout, **kw)
        self.norm1 = norm(s)
        self.cross = Attention(s.hidden, s.heads, s.attn_dropout, cross=True, **kw) if s.cross else None
        self.norm_cross = norm(s) if s.cross else None
        self.mlp = MLP(s.hidden, s.inner, s.act, s.dropout, bias=s.bias, gated=s.gated)
        self.norm2 = norm(s)
        self.drop = Dropout(s.dropout)

    def _sub(self, x, normed, fn):
        if self.pre_ln:
            y, kv = fn(normed(x))
            return x + self.drop(y), kv
        y, kv = fn(x)
        return normed(x + self.drop(y)), kv

    def forward(
        self,
        x: torch.Tensor,
        mask=None,
        past=None,
        memory=None,
        memory_mask=None,
        is_causal: bool = False,
    ):
        """Returns (x, present): present = ((k, v) of self-attention, (k, v) of cross-attention or None).
        ``past`` has the same shape as ``present`` from an earlier call (the KV cache of this block)."""
        past_self, past_cross = past if past is not None else (None, None)
        x, kv_self = self._sub(x, self.norm1, lambda h: self.attn(h, mask, past_self, is_causal=is_causal))
        kv_cross = None
        if self.cross is not None:
            x, kv_cross = self._sub(
                x, self.norm_cross, lambda h: self.cross(h, memory_mask, past_cross, memory=memory)
            )
        if self.pre_ln:
            x = x + self.mlp(self.norm2(x))
        else:
            x = self.norm2(x + self.mlp(x))
        return x, (kv_self, kv_cross)
