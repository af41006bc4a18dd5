"""The CPU training path of attention (the explicit softmax(QK^T)V): its forward equals the textbook product
with float32 scores rounded once, in float32 and under bf16 autocast, for every kind of mask and scale, and
its gradients (a float mask's, T5's learned bias, included) are as close to float64's as that product's
(float32), within twice its error (bf16)."""

import pytest
import torch

from warmstart.nn.attention import attend

B, H, T, D = 3, 4, 24, 64


def textbook(q, k, v, mask, dropout, causal, scale):
    """softmax(float32(q k^T) * scale + mask) v, the probabilities rounded to v's dtype before the product."""
    scores = torch.matmul(q, k.transpose(-2, -1)).float() * (D**-0.5 if scale is None else scale)
    if causal:
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    return torch.matmul(scores.softmax(-1).to(v.dtype), v)


def run(fn, inputs, mask, causal, scale, dtype):
    """(output in float32, gradients of q, k, v and a float mask in float64) of a weighted sum."""
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    m = mask
    if mask is not None and mask.dtype != torch.bool:
        m = mask.detach().clone().to(torch.float64 if dtype == torch.float64 else torch.float32)
        m.requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
        q, k, v = (t.to(dtype) for t in leaves)  # bf16 as a projection under autocast gives them
        out = fn(q, k, v, m, 0.0, causal, scale)
    weights = torch.linspace(-1, 1, out.numel()).view_as(out)
    (out.double() * weights.double()).sum().backward()
    grads = [t.grad.double() for t in leaves]
    if m is not None and m.dtype != torch.bool:
        grads.append(m.grad.double())
    return out.float(), grads


MASKS = ["none", "padding", "causal", "float"]


@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_training_attention_equals_the_textbook_product(dtype, kind, scale):
    torch.manual_seed(0)
    inputs = [torch.randn(B, H, T, D, dtype=torch.float64) * 2 for _ in range(3)]
    padding = torch.ones(B, T, dtype=torch.bool)
    padding[1, 15:] = False
    mask = {"none": None, "padding": padding[:, None, None, :], "causal": None,
            "float": torch.randn(1, H, T, T, dtype=torch.float64)}[kind]  # fmt: skip
    causal = kind == "causal"
    out, grads = run(attend, inputs, mask, causal, scale, dtype)
    want, want_grads = run(textbook, inputs, mask, causal, scale, dtype)
    exact, exact_grads = run(textbook, inputs, mask, causal, scale, torch.float64)
    torch.testing.assert_close(out, want, rtol=0, atol=0)  # the same bits as the textbook product
    for got, reference, truth in zip(grads, want_grads, exact_grads):
        error, allowed = (got - truth).abs().max(), (reference - truth).abs().max()
        # bf16: the softmax's backward reads the bf16 probabilities (as transformers' eager attention does
        # under CPU autocast) and a power-of-two scale rides on q: within twice the textbook's error
        assert error <= (2.0 if dtype == torch.bfloat16 else 1.0) * allowed + 1e-12, (error, allowed)


def test_without_autograd_attention_is_sdpa():
    torch.manual_seed(1)
    q, k, v = (torch.randn(B, H, T, D) for _ in range(3))
    with torch.no_grad():
        got = attend(q, k, v, None, 0.0, True, None)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.equal(got, want)
