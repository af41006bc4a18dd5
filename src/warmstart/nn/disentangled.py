"""DeBERTa-v2/v3 disentangled self-attention (He et al., 2021) with log-bucketed relative positions.

Each score adds three terms, all divided by sqrt(3 * head_dim):

    content->content   q_i . k_j
    content->position  q_i . kr[c2p(i, j)]    c2p(i, j) = clamp(r(i, j) + S, 0, 2S - 1)
    position->content  k_j . qr[p2c(j, i)]    p2c(j, i) = clamp(-r(j, i) + S, 0, 2S - 1)

where r(i, j) is the bucketed i - j, S the number of buckets, and qr / kr the rows of the shared relative
embedding table projected with the SAME query / key weights as the content (``share_att_key=True``). This is
exactly what transformers' ``DebertaV2`` computes with ``pos_att_type=["p2c", "c2p"]``: its p2c term gathers
``key @ pos_query^T`` with ``-r`` and transposes. Since r is odd (r(j, i) = -r(i, j)), p2c(j, i) = c2p(i, j).

The content projections carry ``SelfAttention``'s names (a fused ``qkv`` and ``out``), so LoRA and BitFit
find them; the relative table is projected through ``self.qkv`` too, so an adapter on ``qkv`` acts on both.
The encoder owns one ``RelativeEmbeddings`` and passes its table to every layer.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from warmstart.nn.dropout import Dropout


def log_bucket_position(relative_pos: torch.Tensor, buckets: int, max_position: int) -> torch.Tensor:
    """DeBERTa-v2's ``make_log_bucket_position``: exact for |r| <= buckets // 2, log-spaced beyond, sign kept.

    |r| = max_position - 1 maps to buckets - 1; larger distances keep growing slowly (the attention clamps
    them to the table). Computed in float32 like transformers, so the buckets agree with it bit for bit.
    """
    mid = buckets // 2
    sign = torch.sign(relative_pos)
    inside = (relative_pos < mid) & (relative_pos > -mid)
    abs_pos = torch.where(inside, torch.full_like(relative_pos, mid - 1), relative_pos.abs())
    log_base = torch.log(torch.tensor((max_position - 1) / mid, dtype=torch.float32))
    log_pos = torch.ceil(torch.log(abs_pos.float() / mid) / log_base.to(abs_pos.device) * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, relative_pos, (log_pos * sign).long())


def relative_positions(
    q_len: int, k_len: int, buckets: int, max_position: int, device: torch.device | None = None
) -> torch.Tensor:
    """LongTensor (q_len, k_len) holding the bucketed i - j for query i and key j."""
    q = torch.arange(q_len, dtype=torch.long, device=device)
    k = torch.arange(k_len, dtype=torch.long, device=device)
    return log_bucket_position(q[:, None] - k[None, :], buckets, max_position)


def _bucket_reach(distance: int, buckets: int, max_position: int) -> int:
    """An upper bound on |bucket| for distances up to ``distance``, in plain Python (no device sync):
    the log bucket plus one for float rounding; an extra table row costs nothing but a little work."""
    mid = buckets // 2
    if distance <= mid:
        return distance
    return math.ceil(math.log(distance / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid + 1


class RelativeEmbeddings(nn.Module):
    """The encoder's shared relative position table: LayerNorm(Embedding(2 * buckets, hidden).weight)."""

    def __init__(self, buckets: int, hidden: int, eps: float):
        super().__init__()
        self.embed = nn.Embedding(2 * buckets, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self) -> torch.Tensor:
        """The (2 * buckets, hidden) table every layer's attention reads."""
        return self.norm(self.embed.weight)


class DisentangledSelfAttention(nn.Module):
    """Multi-head disentangled self-attention (c2c + c2p + p2c), DeBERTa-v3 style.

    ``buckets`` and ``max_position`` are DeBERTa's ``position_buckets`` and ``max_relative_positions``.
    ``dropout`` acts on the attention probabilities; ``rel_dropout`` on the relative table as each layer
    reads it (DeBERTa's ``pos_dropout``, which uses ``hidden_dropout_prob``).
    """

    def __init__(
        self,
        hidden: int,
        heads: int,
        dropout: float,
        buckets: int = 256,
        max_position: int = 512,
        bias: bool = True,
        rel_dropout: float = 0.0,
    ):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        if buckets < 2 or max_position <= buckets // 2 + 1:
            raise ValueError(
                f"need buckets >= 2 and max_position > buckets // 2 + 1, got {buckets}, {max_position}"
            )
        self.heads, self.buckets, self.max_position = heads, buckets, max_position
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=bias)
        self.out = nn.Linear(hidden, hidden, bias=bias)
        self.drop = Dropout(dropout)
        self.rel_drop = Dropout(rel_dropout)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        rel: torch.Tensor | None = None,
        query: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x: (B, T, H); mask: bool (B, 1, 1, T), True where a key may be attended, or None (all);
        rel: the (2 * buckets, H) relative table from the encoder's ``RelativeEmbeddings``; query: (B, T, H)
        states the queries are projected from instead of ``x`` (keys and values still come from ``x``; the
        content->position term reads these queries), as DeBERTa's enhanced mask decoder runs its layers."""
        if rel is None:
            raise ValueError("DisentangledSelfAttention needs the relative embedding table `rel`")
        b, t, h = x.shape
        n, d, s = self.heads, h // self.heads, self.buckets
        q, k, v = self.qkv(x).view(b, t, 3, n, d).permute(2, 0, 3, 1, 4)  # each (B, n, T, d)
        if query is not None:
            q = self.qkv(query).view(b, t, 3, n, d)[:, :, 0].transpose(1, 2)

        # Only table rows lo..hi can be reached at this length: project and score just those.
        r = relative_positions(t, t, s, self.max_position, device=x.device)
        reach = _bucket_reach(t - 1, s, self.max_position)
        lo, hi = max(s - reach, 0), min(s + reach, 2 * s - 1)
        table = self.rel_drop(rel[lo : hi + 1])
        pos_q, pos_k, _ = self.qkv(table).view(-1, 3, n, d).permute(1, 2, 0, 3)  # each (n, rows, d)
        c2p_index = (r + s).clamp(0, 2 * s - 1).sub(lo).expand(b, n, t, t)  # [i, j]: query i, key j
        p2c_index = (-r + s).clamp(0, 2 * s - 1).sub(lo).expand(b, n, t, t)  # [j, i]: key j, query i

        scores = q @ k.transpose(-1, -2)
        scores = scores + torch.gather(q @ pos_k.transpose(-1, -2), -1, c2p_index)
        scores = scores + torch.gather(k @ pos_q.transpose(-1, -2), -1, p2c_index).transpose(-1, -2)
        scores = scores / math.sqrt(3 * d)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        probs = self.drop(scores.softmax(dim=-1))
        return self.out((probs @ v).transpose(1, 2).reshape(b, t, h))
