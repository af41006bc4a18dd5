"""onnxruntime's fused attention in an exported graph (`export --to onnx --optimize`): every bidirectional
self-attention with a fused QKV projection (``nn.attention.SelfAttention``: BERT and its variants but
DeBERTa) is traced as one ``com.microsoft.Attention`` node, the QKV projection, the scaled product, the
padding mask and the softmax inside it, where the plain export writes some thirty standard ops per layer.

onnxruntime's own optimizer does not fuse the plain graph's attention (its pattern matcher looks for the
ops of an older exporter), and int8 quantization turns the fused node into ``QAttention``, its QKV
projection in int8 too. The node is onnxruntime's: such a graph runs in onnxruntime only, so the portable
export (no ``--optimize``) keeps the standard ops. A layer the node cannot express (a causal or relative
attention, a mask that is not padding, an adapter on QKV) is traced as before."""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.nn.attention import SelfAttention


class _Attention(torch.autograd.Function):
    """PyTorch's attention for the tracer's sample run; onnxruntime's ``Attention`` node in the graph."""

    @staticmethod
    def forward(ctx, x, weight, bias, mask, heads: int):
        b, t, h = x.shape
        q, k, v = (x @ weight + bias).view(b, t, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bool()[:, None, None, :])
        return y.transpose(1, 2).reshape(b, t, h)

    @staticmethod
    def symbolic(g, x, weight, bias, mask, heads: int):
        out = g.op("com.microsoft::Attention", x, weight, bias, mask, num_heads_i=heads)
        out.setType(
            x.type()
        )  # (batch, length, hidden) in x's type: shape inference and the quantizer read it
        return out


def _fused(attn: SelfAttention):
    """``attn.forward`` tracing as one Attention node where the layer allows it, else as before."""
    plain = attn.forward

    def forward(x, mask=None, query=None):
        b, t, _ = x.shape
        if query is not None or mask is None or mask.dtype != torch.bool or mask.shape[1:3] != (1, 1):
            return plain(x, mask, query)
        keys = mask.reshape(b, t).to(torch.int32)  # onnxruntime's raw 2-D padding mask: 1 attend, 0 not
        y = _Attention.apply(x, attn.qkv.weight.t(), attn.qkv.bias, keys, attn.heads)
        return attn.out(y)

    return forward


def fusable(attn: nn.Module) -> bool:
    """Whether ``attn`` is a self-attention the Attention node computes."""
    return (
        type(attn) is SelfAttention
        and not attn.causal
        and type(attn.qkv) is nn.Linear
        and attn.qkv.bias is not None
    )


@contextmanager
def fused_attention(graph: nn.Module, on: bool = True):
    """While inside: ``graph``'s fusable attention layers trace as onnxruntime's Attention node (``on``);
    the modules are as they were afterwards. Yields the number of layers fused."""
    layers = [m for m in graph.modules() if fusable(m)] if on else []
    for attn in layers:
        attn.forward = _fused(attn)
    try:
        yield len(layers)
    finally:
        for attn in layers:
            del attn.forward  # the instance attribute: the class's forward again
