"""Multi-head attention with a fused QKV projection: explicit softmax(QK^T)V on the CPU for short sequences,
PyTorch's scaled_dot_product_attention (flash / memory-efficient kernels) otherwise.

On 2 CPU cores a small BERT's training step at 30-128 tokens ran 16% faster with the explicit product than
with SDPA (whose CPU flash backward is slow at these lengths, and whose dropout draws masks with bernoulli_);
beyond ``MATH_MAX_KEYS`` keys the T x T score matrix costs more memory than it saves time: SDPA takes over.
Without autograd (evaluation, inference) SDPA runs too: its forward is as fast here, and it is what
transformers runs, so outputs stay equal to the reference's to the last bits.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.nn.dropout import dropout as drop

MATH_MAX_KEYS = 256


def attend(q, k, v, mask=None, dropout: float = 0.0, causal: bool = False, scale: float | None = None):
    """softmax(q k^T * scale + mask) v over (B, heads, T, d) tensors, as ``F.scaled_dot_product_attention``
    computes it: ``mask`` bool (True = attend) or additive float; ``causal``: query i sees keys 0..i (the
    top-left alignment SDPA uses); ``scale`` None is 1/sqrt(d). The explicit product only while training on
    the CPU with at most MATH_MAX_KEYS keys (module docstring). Under bf16 autocast the scores stay in bf16
    (the product's own rounding) and the softmax reads and writes bf16, computing in float32 inside: the
    probabilities equal float32's rounded to bf16; a power-of-two scale goes on q (exact, and q is smaller
    than the scores), another scale and a float mask take the scores to float32 as before."""
    if q.device.type != "cpu" or k.shape[-2] > MATH_MAX_KEYS or not torch.is_grad_enabled():
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=causal, scale=scale
        )
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    exact = scale == 2.0 ** round(math.log2(scale))  # a power of two (1/8 for 64-wide heads; T5's 1)
    scores = torch.matmul(q * scale if exact and scale != 1 else q, k.transpose(-2, -1))
    if not exact:
        scores = scores.float() * scale
    allowed = None
    if mask is not None and mask.dtype == torch.bool:
        allowed = mask
    elif mask is not None:
        scores = scores + mask  # bf16 scores + a float32 mask (T5's bias) sum in float32, as SDPA's math
    if allowed is not None or causal:
        scores = scores + _blocked(scores, allowed, causal)
    probs = drop(scores.softmax(-1).to(v.dtype), dropout)
    return torch.matmul(probs, v)


def _blocked(scores: torch.Tensor, mask: torch.Tensor | None, causal: bool) -> torch.Tensor:
    """-inf where a key may not be attended (``mask`` False, or a future key when ``causal``), 0 elsewhere,
    in the scores' dtype: an add, a third of ``masked_fill``'s time here, and exact."""
    queries, keys = scores.shape[-2:]
    out = torch.zeros(queries if causal else 1, keys, dtype=scores.dtype, device=scores.device)
    if causal:
        out.masked_fill_(torch.ones_like(out, dtype=torch.bool).triu(1), float("-inf"))
    return out if mask is None else out.masked_fill(~mask, float("-inf"))


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, dropout: float, bias: bool = True, causal: bool = False):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        self.heads, self.dropout, self.causal = heads, dropout, causal
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=bias)
        self.out = nn.Linear(hidden, hidden, bias=bias)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, query: torch.Tensor | None = None
    ) -> torch.Tensor:
        """x: (B, T, H); mask: bool (B, 1, 1, T), True where a key may be attended, or None (all); query:
        (B, T, H) states the queries are projected from instead of ``x`` (keys and values: from ``x``)."""
        b, t, h = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        if query is not None:
            q = self.qkv(query).view(b, t, 3, self.heads, h // self.heads)[:, :, 0].transpose(1, 2)
        y = attend(q, k, v, mask, self.dropout if self.training else 0.0, self.causal)
        return self.out(y.transpose(1, 2).reshape(b, t, h))


def padding_mask(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T) 1/0 padding mask -> (B, 1, 1, T) bool for SDPA; None when nothing is padded."""
    if attention_mask is None:
        return None
    return attention_mask.bool()[:, None, None, :]


class Attention(nn.Module):
    """Self- or cross-attention with an optional key/value cache (decoders, encoder-decoders).

    Self-attention projects Q, K, V with one fused ``qkv``; cross-attention projects Q from the decoder
    (``q``) and K, V from the encoder output (``kv``). ``head_dim`` may differ from hidden / heads (T5);
    ``scale`` None is 1/sqrt(head_dim) (T5 uses 1: its scaling is folded into the initialisation).
    """

    def __init__(
        self,
        hidden: int,
        heads: int,
        dropout: float,
        *,
        bias: bool = True,
        cross: bool = False,
        head_dim: int | None = None,
        scale: float | None = None,
    ):
        super().__init__()
        if head_dim is None and hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        self.heads, self.dropout, self.cross, self.scale = heads, dropout, cross, scale
        self.head_dim = head_dim or hidden // heads
        inner = heads * self.head_dim
        if cross:
            self.q = nn.Linear(hidden, inner, bias=bias)
            self.kv = nn.Linear(hidden, 2 * inner, bias=bias)
        else:
            self.qkv = nn.Linear(hidden, 3 * inner, bias=bias)
        self.out = nn.Linear(inner, hidden, bias=bias)

    def _split(self, x: torch.Tensor, parts: int) -> tuple[torch.Tensor, ...]:
        b, t, _ = x.shape
        return x.view(b, t, parts, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)

    def forward(self, x, mask=None, past=None, memory=None, is_causal=False):
        """x: (B, T, H). ``mask``: bool (True = attend) or additive float, broadcastable to
        (B, heads, T, T_keys). ``past``: cached (k, v) of earlier positions (self-attention) or of the
        encoder output (cross-attention, then ``memory`` is not read again). Returns (y, (k, v))."""
        b, t, _ = x.shape
        if self.cross:
            (q,) = self._split(self.q(x), 1)
            k, v = past if past is not None else self._split(self.kv(memory), 2)
        else:
            q, k, v = self._split(self.qkv(x), 3)
            if past is not None:
                k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        y = attend(
            q, k, v, mask, self.dropout if self.training else 0.0, is_causal and mask is None, self.scale
        )
        return self.out(y.transpose(1, 2).reshape(b, t, -1)), (k, v)


def decoder_mask(
    query_len: int,
    key_mask: torch.Tensor | None,
    past_len: int = 0,
    bias: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor | None:
    """Additive mask for causal self-attention over ``past_len`` cached plus ``query_len`` new positions.

    ``key_mask``: (B, past_len + query_len) 1/0 padding of all keys, or None. ``bias``: a position bias
    (1 or B, heads, T, T_keys) added in (T5). Returns None when plain ``is_causal`` does the job. Disallowed
    entries get the dtype's minimum, not -inf, so a fully masked row (a left-pad query) stays finite."""
    if key_mask is None and bias is None and (past_len == 0 or query_len == 1):
        return None  # plain is_causal, or one new token that may see every cached one
    keys = past_len + query_len
    device = key_mask.device if key_mask is not None else (bias.device if bias is not None else None)
    rows = torch.arange(query_len, device=device)[:, None] + past_len
    allowed = torch.arange(keys, device=device)[None, :] <= rows  # (T, T_keys)
    allowed = allowed[None, None]
    if key_mask is not None:
        allowed = allowed & key_mask.bool()[:, None, None, :]
    out = torch.zeros(allowed.shape, dtype=dtype, device=device) if bias is None else bias.to(dtype)
    return out.masked_fill(~allowed, torch.finfo(dtype).min)


def encoder_mask(key_mask: torch.Tensor | None, bias: torch.Tensor | None = None, dtype=torch.float32):
    """Additive mask for bidirectional attention: padding (B, T_keys) 1/0 and an optional position bias."""
    if bias is None:
        return padding_mask(key_mask)
    if key_mask is None:
        return bias.to(dtype)
    return bias.to(dtype).masked_fill(~key_mask.bool()[:, None, None, :], torch.finfo(dtype).min)
