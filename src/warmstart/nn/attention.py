"""Multi-head self-attention through PyTorch's scaled_dot_product_attention, with a fused QKV projection."""

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, dropout: float, bias: bool = True, causal: bool = False):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        self.heads, self.dropout, self.causal = heads, dropout, causal
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=bias)
        self.out = nn.Linear(hidden, hidden, bias=bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T, H); mask: bool (B, 1, 1, T), True where a key may be attended, or None (all)."""
        b, t, h = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal
        )
        return self.out(y.transpose(1, 2).reshape(b, t, h))


def padding_mask(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T) 1/0 padding mask -> (B, 1, 1, T) bool for SDPA; None when nothing is padded."""
    if attention_mask is None:
        return None
    return attention_mask.bool()[:, None, None, :]
