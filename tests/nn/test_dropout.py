"""The CPU dropout: its rate and scale, a backward pass that regenerates the forward's mask, independent
draws, and runs that repeat from torch's seed."""

import pytest
import torch

from warmstart.nn.dropout import Dropout, dropout, keep_mask, masked

N = 1 << 20


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_the_rate_and_the_scale(dtype):
    torch.manual_seed(0)
    x = torch.ones(N, dtype=dtype)
    y = dropout(x, 0.1)
    assert y.dtype == dtype and y.shape == x.shape
    dropped = float((y == 0).float().mean())
    q = round(0.1 * 65536) / 65536
    assert abs(dropped - q) < 4 * (q * (1 - q) / N) ** 0.5  # 4 sigma
    kept = y[y != 0].float()
    assert torch.allclose(kept, torch.full_like(kept, 65536 / (65536 - 6554)), rtol=4e-3)  # bf16 rounding
    both = float(((y[:-1] == 0) & (y[1:] == 0)).float().mean())  # neighbours drop independently
    assert abs(both - q * q) < 4 * (q * q / N) ** 0.5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_backward_pass_uses_the_forwards_mask(dtype):
    torch.manual_seed(1)
    x = (torch.rand(64, 48, 33) + 0.5).to(dtype).transpose(0, 1).requires_grad_()  # not contiguous
    upstream = torch.rand(48, 64, 33).to(dtype)
    y = dropout(x, 0.25)
    (y * upstream).sum().backward()
    scale = 65536 / (65536 - 16384)
    want = (y != 0).to(dtype) * upstream * scale
    torch.testing.assert_close(x.grad, want)
    assert 0.2 < float((y == 0).float().mean()) < 0.3


def test_runs_repeat_from_the_seed_and_calls_differ():
    torch.manual_seed(7)
    a, b = dropout(torch.ones(4096), 0.5), dropout(torch.ones(4096), 0.5)
    torch.manual_seed(7)
    again = dropout(torch.ones(4096), 0.5)
    assert torch.equal(a, again) and not torch.equal(a, b)
    state = torch.get_rng_state()  # a resumed run restores the generator and draws the same masks
    c = dropout(torch.ones(4096), 0.5)
    torch.set_rng_state(state)
    assert torch.equal(dropout(torch.ones(4096), 0.5), c)


def test_off_in_eval_and_at_zero_and_other_dtypes_fall_back():
    layer = Dropout(0.3).eval()
    x = torch.randn(10, 10)
    assert layer(x) is x and dropout(x, 0.0) is x
    doubles = dropout(torch.ones(10_000, dtype=torch.float64), 0.3)  # torch's own dropout
    assert doubles.dtype == torch.float64 and 0.25 < float((doubles == 0).double().mean()) < 0.35
    odd = dropout(torch.ones(7), 0.5)  # a length that is not a multiple of 4
    assert odd.shape == (7,) and set(odd.tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n", [1 << 16, 4097, 7])
def test_the_one_pass_kernel_writes_the_bits_of_mask_times_scale(dtype, n):
    """The compiled pass equals ``x * keep_mask(...) * scale`` as torch computes it, bit for bit, for
    negative zeros, infinities (dropped: NaN) and NaNs, lengths off a multiple of 4, strided inputs; in
    bf16 for every one of its 65,536 values (rounding ties, subnormals, the largest finite ones)."""
    torch.manual_seed(2)
    x = (torch.randn(n, 2) * 300).to(dtype)[:, 0]  # every other element: not contiguous
    x[:4] = torch.tensor([float("nan"), float("inf"), -0.0, -float("inf")]).to(dtype)
    if dtype == torch.bfloat16 and n == 1 << 16:
        x = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int16).view(torch.bfloat16)
    ints = torch.int32 if dtype == torch.float32 else torch.int16
    for q in (1, 6554, 13107, 16384, 32768, 65535):
        want = (x * keep_mask(x.shape, dtype, 99, q)).mul_(65536 / (65536 - q))
        got = masked(x, 99, q)
        assert torch.equal(got.isnan(), want.isnan())
        kept = ~want.isnan()
        assert torch.equal(got[kept].view(ints), want[kept].view(ints))
