"""T5's RMSNorm: the compiled CPU training pass agrees with torch's RMSNorm in float64 (outputs, the input's
and the weight's gradients, also under bf16 autocast), and evaluation runs torch's own, bit for bit."""

import subprocess
import sys

import pytest
import torch

from warmstart.nn.rms_norm import RMSNorm


def pair(width: int):
    ours, reference = RMSNorm(width, eps=1e-6), torch.nn.RMSNorm(width, eps=1e-6).double()
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        reference.weight.copy_(ours.weight.double())
    return ours, reference


def relative(got, want):
    return float((got.detach().double() - want.detach()).abs().max() / want.detach().abs().max())


@pytest.mark.parametrize("shape", [(4, 33, 256), (3, 5, 7, 33), (1, 512)])
@pytest.mark.parametrize("autocast", [False, True])
def test_training_pass_matches_float64(shape, autocast):
    torch.manual_seed(0)
    ours, reference = pair(shape[-1])
    x = (torch.randn(shape) * 3).requires_grad_()
    x64 = x.detach().double().requires_grad_()
    upstream = torch.randn(shape)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        y = ours(x)
    assert y.dtype == torch.float32 and y.shape == x.shape
    y.backward(upstream)
    want = reference(x64)
    want.backward(upstream.double())
    assert relative(y, want) < 1e-6
    assert relative(x.grad, x64.grad) < 1e-6
    assert relative(ours.weight.grad, reference.weight.grad) < 2e-5  # summed over the rows in float32


def test_evaluation_is_torchs_own_and_the_keys_are_nn_rmsnorms():
    torch.manual_seed(1)
    ours = RMSNorm(64, eps=1e-6)
    theirs = torch.nn.RMSNorm(64, eps=1e-6)
    theirs.load_state_dict(ours.state_dict())  # the same keys: checkpoints load either way
    x = torch.randn(2, 9, 64)
    with torch.no_grad():
        assert torch.equal(ours(x), theirs(x))


COMPILED_FIRST = """
import torch
from warmstart.nn.rms_norm import RMSNorm
torch.manual_seed(2)
eager = torch.nn.Sequential(torch.nn.Linear(16, 16), RMSNorm(16, eps=1e-6))
x = torch.randn(4, 16)
got = torch.compile(eager)(x)  # first: the numba loops are first met inside dynamo's tracing
got.sum().backward()
grads = [p.grad.clone() for p in eager.parameters()]
eager.zero_grad()
want = eager(x)
want.sum().backward()
torch.testing.assert_close(got, want)
for p, g in zip(eager.parameters(), grads, strict=True):
    torch.testing.assert_close(p.grad, g)
print("same")
"""


def test_under_torch_compile_the_loops_run_outside_the_graph():
    """train.compile: a compiled model trains through the numba pass (a graph break) as eager does, also
    when torch.compile meets it first (a fresh process: numba's first compilation inside dynamo failed)."""
    done = subprocess.run([sys.executable, "-c", COMPILED_FIRST], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "same", done.stderr[-2000:]
