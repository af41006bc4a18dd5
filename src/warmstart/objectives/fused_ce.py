"""Fused linear cross-entropy: the output projection ``hidden @ weight.T``, the token cross-entropy and its
gradients in one forward (the idea of Liger kernel's fused linear cross-entropy, written here in PyTorch).

Why: the plain head keeps the (N, V) logits, makes an fp32 copy of them for the loss, writes the fp32
log-probabilities, and in backward the fp32 gradient of each and its cast back: five or six passes over
(N, V) arrays that dominate a small model's step. Here the logits are made once in the matmul dtype (bf16
under autocast), each cache-sized chunk of rows is taken to fp32 for its log-sum-exp and turned into
softmax - one-hot in place, and the two gradient products are full-size matmuls on that buffer, all in
forward; backward only scales them by the incoming gradient, so nothing is recomputed. Rows whose label is
ignored are dropped first. Chunked products (one chunk of logits alive at a time) were measured slower on
a CPU: summing a (V, H) weight gradient per chunk costs more than the (N, V) buffer saves.

Loss and gradients are those of ``F.cross_entropy(logits.float(), labels, reduction="sum")`` on the same
logits, the matmuls in the autocast dtype as autocast runs them.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable


class LinearCrossEntropy(torch.autograd.Function):
    """Sum of the token cross-entropies of ``hidden @ weight.T`` over the rows ``keep``; see the module."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, labels, keep, chunk_rows, dtype, need_hidden, need_weight):
        with torch.autocast(hidden.device.type, enabled=False):
            flat = hidden.reshape(-1, hidden.shape[-1])
            h = flat.index_select(0, keep).to(dtype)
            target = labels.reshape(-1).index_select(0, keep)
            w = weight.to(dtype)
            exact = torch.promote_types(dtype, torch.float32)  # softmax dtype: fp32, or fp64 for fp64 inputs
            logits = h @ w.T  # (n, V) in the matmul dtype; becomes the logits' gradient in place
            loss = torch.zeros((), dtype=exact, device=hidden.device)
            for start in range(0, target.numel(), chunk_rows):
                rows = slice(start, start + chunk_rows)
                chunk, tc = logits[rows].to(exact), target[rows]  # a view when exact == dtype
                if bias is not None:
                    chunk = chunk + bias  # in fp32, as the plain head adds its fp32 bias to bf16 logits
                lse = torch.logsumexp(chunk, dim=-1)
                loss += (lse - chunk.gather(1, tc[:, None]).squeeze(1)).sum()
                if need_hidden or need_weight:
                    g = chunk.sub_(lse[:, None]).exp_()  # softmax - one-hot: d(sum loss) / d(logits)
                    g[torch.arange(tc.numel(), device=g.device), tc] -= 1.0
                    if chunk.dtype != logits.dtype or bias is not None:  # else written in place
                        logits[rows] = g
            grad_h = grad_w = None
            if need_hidden:
                grad_h = torch.zeros_like(flat).index_copy_(0, keep, (logits @ w).to(flat.dtype))
                grad_h = grad_h.view_as(hidden)
            if need_weight:
                grad_w = (logits.T @ h).to(weight.dtype)
        ctx.save_for_backward(grad_h, grad_w)
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        grad_h, grad_w = ctx.saved_tensors
        if grad_h is not None:
            grad_h = grad_h * grad_output.to(grad_h.dtype)
        if grad_w is not None:
            grad_w = grad_w * grad_output.to(grad_w.dtype)
        return grad_h, grad_w, None, None, None, None, None, None, None


def linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    labels: torch.Tensor,
    ignore_index: int = -100,
    *,
    bias: torch.Tensor | None = None,
    chunk_rows: int | None = None,
) -> tuple[torch.Tensor, int]:
    """(loss_sum, n): the summed cross-entropy of ``hidden @ weight.T`` (hidden (..., H), weight (V, H); plus
    ``bias`` (V,), a constant that gets no gradient) against ``labels`` (...) over the n positions whose label
    is not ``ignore_index``; loss_sum is a 0-dim fp32 tensor (fp64 for fp64 inputs). ``chunk_rows`` (rows
    taken to fp32 at a time) defaults to about 16 MB of fp32 logits."""
    keep = (labels.reshape(-1) != ignore_index).nonzero().squeeze(1)
    device_type = hidden.device.type
    if torch.is_autocast_enabled(device_type) and hidden.dtype != torch.float64:
        dtype = torch.get_autocast_dtype(device_type)
    else:
        dtype = torch.promote_types(hidden.dtype, weight.dtype)
    grad = torch.is_grad_enabled()
    chunk_rows = chunk_rows or max(64, 2**22 // weight.shape[0])
    loss = LinearCrossEntropy.apply(
        hidden,
        weight,
        None if bias is None else bias.detach().to(torch.promote_types(dtype, torch.float32)),
        labels,
        keep,
        chunk_rows,
        dtype,
        grad and hidden.requires_grad,
        grad and weight.requires_grad,
    )
    return loss, keep.numel()
