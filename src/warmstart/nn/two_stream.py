"""XLNet's two-stream relative attention (Yang et al. 2019), on Transformer-XL's relative positions (Dai et
al. 2019), in the (batch, heads, time, head width) layout.

The score of query i and key j is, scaled by 1/sqrt(d_head),

    (q_i + r_w_bias) . k_j            content: what j holds
  + (q_i + r_r_bias) . r_(i-j)        position: the projected sinusoid of the distance i - j
  + (q_i + r_s_bias) . seg_embed[s]   segment: s = 0 when i and j lie in the same segment, else 1

The content stream (h) queries at every position and sees its own token; the query stream (g: one row per
prediction target, started from mask_emb) queries at its target's position with its own query vector and
sees only what the permutation mask allows. Both read the same keys and values (the content stream's, with
the memory in front). The position and segment terms and the mask form one additive bias that goes with
the content term to ``scaled_dot_product_attention`` (a fused kernel where the device has one).

Parameters keep transformers' layout: q, k, v, o, r (d_model, n_head, d_head); r_w_bias, r_r_bias,
r_s_bias (n_head, d_head); seg_embed (2, n_head, d_head); the output projection is followed by dropout, the
residual and a LayerNorm (post-LN), as in XLNetRelativeAttention.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.nn.dropout import Dropout


def sinusoids(positions: torch.Tensor, width: int) -> torch.Tensor:
    """(..., R) float32 distances -> (..., R, width): [sin(p f), cos(p f)], f = 10000^(-2k / width)."""
    inv_freq = 1 / torch.pow(10000, torch.arange(0, width, 2, device=positions.device).float() / width)
    angles = positions[..., None] * inv_freq
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def relative_positions(q_len: int, k_len: int, width: int, bidirectional: bool, bi_data: bool,
                       clamp_len: int, batch: int, device=None) -> torch.Tensor:  # fmt: skip
    """The encodings of the relative distances k_len, k_len - 1, ..., down to 1 - q_len (bidirectional) or
    0 (causal): (1, R, width), or with ``bi_data`` (batch, R, width), the second half of the batch reading
    every distance negated (XLNet's backward half of a pretraining batch)."""
    end = -q_len if bidirectional else -1
    forward = torch.arange(k_len, end, -1, device=device, dtype=torch.float32)
    distances = torch.stack([forward, -forward]) if bi_data else forward[None]
    if clamp_len > 0:
        distances = distances.clamp(-clamp_len, clamp_len)
    table = sinusoids(distances, width)
    return table.repeat_interleave(batch // 2, dim=0) if bi_data else table


def rel_shift(scores: torch.Tensor, k_len: int) -> torch.Tensor:
    """(B, N, T, R) scores of each query against every distance in ``relative_positions`` order ->
    (B, N, T, k_len), entry (i, j) the score against distance i + M - j (M = k_len - T, the memory): row i
    moves left by T - i. Transformer-XL's trick (transformers' rel_shift_bnij): no index tensor."""
    b, n, t, r = scores.shape
    return scores.reshape(b, n, r, t)[:, :, 1:].reshape(b, n, t, r - 1)[..., :k_len]


@dataclass
class Layout:
    """What every layer's attention reads besides the states. Masks are True where a query may NOT attend.

    content_mask (B, T, K) or None; segments (B, T, K) True where query and key lie in different segments,
    or None (no segment term). The query stream (None without targets): ``distance`` (B, 1, P, K) the index
    into ``relative_positions`` of each target-key pair, ``query_mask`` / ``query_segments`` (B, P, K) the
    rows of the targets' positions, ``weight`` (B, 1, P, 1): 1 for a target, 0 for an unused row (whose
    attention output is then 0, as transformers' target_mapping gives)."""

    content_mask: torch.Tensor | None = None
    segments: torch.Tensor | None = None
    distance: torch.Tensor | None = None
    query_mask: torch.Tensor | None = None
    query_segments: torch.Tensor | None = None
    weight: torch.Tensor | None = None


class TwoStreamAttention(nn.Module):
    """``forward(h, g, r, layout, memory=None) -> (h', g')``: h (B, T, H) the content stream, g (B, P, H) the
    query stream or None, r (1 or B, R, H) the relative position encodings, memory (B, M, H) or None."""

    def __init__(self, d_model: int, n_head: int, dropout: float, eps: float):
        super().__init__()
        d_head = d_model // n_head
        for name in ("q", "k", "v", "o", "r"):
            setattr(self, name, nn.Parameter(torch.empty(d_model, n_head, d_head)))
        for name in ("r_w_bias", "r_r_bias", "r_s_bias"):
            setattr(self, name, nn.Parameter(torch.empty(n_head, d_head)))
        self.seg_embed = nn.Parameter(torch.empty(2, n_head, d_head))
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.drop = Dropout(dropout)
        self.p, self.scale = dropout, d_head**-0.5

    def reset_parameters(self, std: float) -> None:
        """transformers' initialisation: every projection and bias normal(0, std); the norm 1 and 0."""
        for p in (self.q, self.k, self.v, self.o, self.r, self.r_w_bias, self.r_r_bias, self.r_s_bias,
                  self.seg_embed):  # fmt: skip
            nn.init.normal_(p, std=std)
        self.norm.reset_parameters()

    def heads(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """(B, L, H) @ (H, N, D) -> (B, N, L, D)."""
        b, length, _ = x.shape
        n, d = weight.shape[1:]
        return (x @ weight.flatten(1)).view(b, length, n, d).transpose(1, 2)

    def forward(self, h, g, r, layout: Layout, memory=None):
        both = h if memory is None else torch.cat([memory, h], dim=1)
        k, v, kr = self.heads(both, self.k), self.heads(both, self.v), self.heads(r, self.r)
        out_h = self.attend(self.heads(h, self.q), k, v, kr, None, layout.segments, layout.content_mask)
        h = self.post(out_h, h)
        if g is not None:
            out_g = self.attend(self.heads(g, self.q), k, v, kr, layout.distance, layout.query_segments,
                                layout.query_mask)  # fmt: skip
            g = self.post(out_g * layout.weight.to(out_g.dtype), g)
        return h, g

    def attend(self, q, k, v, kr, distance, segments, mask) -> torch.Tensor:
        """(B, N, L, D) outputs of the queries q (B, N, L, D) over keys k and values v (B, N, K, D).
        ``distance`` None: the queries are the content stream's (row i at position i, shifted as
        Transformer-XL does); else (B, 1, L, K) each query-key pair's index into the distances."""
        scores = (q + self.r_r_bias[:, None]) @ kr.transpose(-1, -2)  # (B, N, L, R)
        if distance is None:
            bias = rel_shift(scores, k.shape[2])
        else:
            bias = scores.gather(-1, distance.expand(*scores.shape[:3], distance.shape[-1]))
        if segments is not None:
            seg = (q + self.r_s_bias[:, None]) @ self.seg_embed.permute(1, 2, 0)  # (B, N, L, 2)
            bias = bias + torch.where(segments[:, None], seg[..., 1:], seg[..., :1])
        bias = bias * self.scale
        if mask is not None:  # transformers subtracts 1e30; fp16 holds at most 65504
            bias = bias.masked_fill(mask[:, None], max(-1e30, torch.finfo(bias.dtype).min))
        return F.scaled_dot_product_attention(
            q + self.r_w_bias[:, None], k, v, attn_mask=bias.to(q.dtype),
            dropout_p=self.p if self.training else 0.0, scale=self.scale,
        )  # fmt: skip

    def post(self, out: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """(B, N, L, D) -> the output projection, dropout, residual and LayerNorm: (B, L, H)."""
        b, n, length, d = out.shape
        projected = out.transpose(1, 2).reshape(b, length, n * d) @ self.o.flatten(1).T
        return self.norm(self.drop(projected) + residual)
