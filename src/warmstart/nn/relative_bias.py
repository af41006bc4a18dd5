"""T5's relative position bias: one learned scalar per head and log-spaced bucket of the distance between
a query and a key, added to the attention logits (no position embeddings anywhere else)."""

from __future__ import annotations

import math

import torch
from torch import nn


def relative_bucket(relative: torch.Tensor, bidirectional: bool, buckets: int, max_distance: int):
    """Bucket of ``key - query``: exact for small distances, log-spaced up to ``max_distance``, then the
    last bucket. Bidirectional (encoder) buckets split by sign; causal (decoder) ones only look back."""
    out = torch.zeros_like(relative)
    if bidirectional:
        buckets //= 2
        out += (relative > 0).long() * buckets
        n = relative.abs()
    else:
        n = (-relative).clamp(min=0)
    exact = buckets // 2
    large = (
        exact
        + (
            torch.log(n.float().clamp(min=1) / exact) / math.log(max_distance / exact) * (buckets - exact)
        ).long()
    )
    large = large.clamp(max=buckets - 1)
    return out + torch.where(n < exact, n, large)


class RelativePositionBias(nn.Module):
    def __init__(self, buckets: int, max_distance: int, heads: int, bidirectional: bool):
        super().__init__()
        self.buckets, self.max_distance, self.bidirectional = buckets, max_distance, bidirectional
        self.bias = nn.Embedding(buckets, heads)

    def forward(self, query_len: int, key_len: int, offset: int = 0) -> torch.Tensor:
        """(1, heads, query_len, key_len); queries sit at positions ``offset ..`` (cached decoding)."""
        device = self.bias.weight.device
        q = torch.arange(offset, offset + query_len, device=device)[:, None]
        k = torch.arange(key_len, device=device)[None, :]
        b = relative_bucket(k - q, self.bidirectional, self.buckets, self.max_distance)
        return self.bias(b).permute(2, 0, 1)[None]
