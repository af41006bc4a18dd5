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

The (N, V) buffer is kept between calls (one per thread, dtype and device, grown to the largest N seen):
nothing outlives a call, and a fresh buffer of a causal LM's size (67 MB for 4,096 rows of 8,192 bf16
logits) is above glibc's largest mmap threshold, so each step would map it anew and fault in its pages
(train/malloc.py). Other devices' allocators cache freed memory themselves.
"""

from __future__ import annotations

import threading

import torch
from torch.autograd.function import once_differentiable

from warmstart.nn.outside_compile import outside_compile

_BUFFERS = threading.local()


def logits_buffer(rows: int, cols: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A (rows, cols) tensor of this thread's kept buffer for ``dtype`` on the CPU (see the module); on other
    devices a fresh one (their caching allocators keep freed memory already)."""
    if device.type != "cpu":
        return torch.empty(rows, cols, dtype=dtype, device=device)
    kept = _BUFFERS.__dict__.setdefault("by_kind", {})
    key = (dtype, device)
    flat = kept.get(key)
    if flat is None or flat.numel() < rows * cols:
        kept.pop(key, None)  # the old one is freed before the larger one is made
        flat = kept[key] = torch.empty(rows * cols, dtype=dtype, device=device)
    return flat[: rows * cols].view(rows, cols)


class LinearCrossEntropy(torch.autograd.Function):
    """Sum of the token cross-entropies of ``hidden @ weight.T`` over the rows ``keep``; see the module."""

    @staticmethod
    def forward(
        ctx, hidden, weight, bias, labels, keep, chunk_rows, dtype, need_hidden, need_weight, need_bias
    ):
        with torch.autocast(hidden.device.type, enabled=False):
            flat = hidden.reshape(-1, hidden.shape[-1])
            n = keep.numel()
            # rows padded to a multiple of 64 (the extra ones repeat row 0 and count for nothing): a few
            # matmul shapes instead of a new one every batch keep oneDNN's kernel cache warm
            padded = torch.nn.functional.pad(keep, (0, -n % 64))
            h = flat.index_select(0, padded).to(dtype)
            target = labels.reshape(-1).index_select(0, padded)
            target[n:] = 0  # any class: the padding counts for nothing
            w = weight.to(dtype)
            exact = torch.promote_types(dtype, torch.float32)  # softmax dtype: fp32, or fp64 for fp64 inputs
            logits = logits_buffer(h.shape[0], w.shape[0], dtype, h.device)
            torch.matmul(h, w.T, out=logits)  # (n, V) in the matmul dtype; becomes their gradient in place
            loss = torch.zeros((), dtype=exact, device=hidden.device)
            grad_b = torch.zeros(weight.shape[0], dtype=exact, device=hidden.device) if need_bias else None
            gradients = need_hidden or need_weight or need_bias
            in_place = bias is None and exact == dtype  # the chunk is then a view of the logits
            for start in range(0, target.numel(), chunk_rows):
                rows = slice(start, start + chunk_rows)
                tc = target[rows]
                real = max(0, min(chunk_rows, n - start))  # the chunk's rows that are not padding
                # in fp32, as the plain head adds its fp32 bias to bf16 logits (a cast, then an add: the same
                # bits as torch.add(bf16, fp32), whose mixed-dtype loop took 1.5x as long here)
                chunk = logits[rows].to(exact, copy=bias is not None)
                if bias is not None:
                    chunk.add_(bias)
                top = chunk.amax(dim=-1, keepdim=True)
                picked = chunk.gather(1, tc[:, None]).squeeze(1)
                chunk.sub_(top).exp_()  # exp(z - max), once: for the loss and for the gradient
                total = chunk.sum(dim=-1, keepdim=True)
                loss += (total.log() + top - picked[:, None])[:real].sum()
                if gradients:
                    g = chunk.div_(total)  # softmax - one-hot: d(sum loss) / d(logits)
                    g[torch.arange(tc.numel(), device=g.device), tc] -= 1.0
                    g[real:] = 0.0
                    if grad_b is not None:
                        grad_b += g.sum(0)
                    if not in_place:
                        logits[rows] = g
            grad_h = grad_w = None
            if need_hidden:
                grad_h = torch.zeros_like(flat).index_add_(0, padded, (logits @ w).to(flat.dtype))
                grad_h = grad_h.view_as(hidden)
            if need_weight:
                grad_w = (logits.T @ h).to(weight.dtype)
            if grad_b is not None:
                grad_b = grad_b.to(bias.dtype)
        ctx.save_for_backward(grad_h, grad_w, grad_b)
        return loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        grads = [None if g is None else g * grad_output.to(g.dtype) for g in ctx.saved_tensors]
        return grads[0], grads[1], grads[2], None, None, None, None, None, None, None


@outside_compile  # train.compile: runs as written (a graph break); dynamo cannot trace its buffers
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
    ``bias`` (V,), which gets a gradient when it requires one) against ``labels`` (...) over the n positions
    whose label is not ``ignore_index``; loss_sum is a 0-dim fp32 tensor (fp64 for fp64 inputs).
    ``chunk_rows`` (rows taken to fp32 at a time) defaults to about 16 MB of fp32 logits on the CPU (its
    caches) and 1 GB elsewhere: on a GPU each chunk is ~8 kernel launches, and bert-base's 30,522-word head
    in chunks of 137 rows made the step wait on the host."""
    keep = (labels.reshape(-1) != ignore_index).nonzero().squeeze(1)
    device_type = hidden.device.type
    if torch.is_autocast_enabled(device_type) and hidden.dtype != torch.float64:
        dtype = torch.get_autocast_dtype(device_type)
    else:
        dtype = torch.promote_types(hidden.dtype, weight.dtype)
    grad = torch.is_grad_enabled()
    chunk_rows = chunk_rows or max(64, (2**22 if device_type == "cpu" else 2**28) // weight.shape[0])
    loss = LinearCrossEntropy.apply(
        hidden,
        weight,
        None if bias is None else bias.to(torch.promote_types(dtype, torch.float32)),
        labels,
        keep,
        chunk_rows,
        dtype,
        grad and hidden.requires_grad,
        grad and weight.requires_grad,
        grad and bias is not None and bias.requires_grad,
    )
    return loss, keep.numel()
