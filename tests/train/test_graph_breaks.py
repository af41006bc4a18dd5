"""Where torch.compile (train.compile) breaks warmstart's graphs, counted by torch._dynamo.explain on the CPU.

A GPU's step must not break at each dropout or at a device sync: on an H200 (2026-11-28) a compiled GPT-2 at
seq 1024 ran at 0.6x transformers' compiled step with a break at every dropout call (25 a forward) and one
at the positions' maximum, read back to check the context length."""

import pytest
import torch

from warmstart.models.gpt2 import GPT2Config, GPT2Model
from warmstart.nn.dropout import dropout

pytestmark = pytest.mark.skipif(not hasattr(torch, "_dynamo"), reason="no torch._dynamo")


def breaks(fn, *args) -> int:
    torch._dynamo.reset()
    return torch._dynamo.explain(fn)(*args).graph_break_count


def test_dropout_breaks_the_graph_only_for_the_cpu_mask():
    # F.dropout's path (a GPU's, and dtypes the hashed CPU mask does not write) is traced into the graph
    x = torch.randn(4, 8, dtype=torch.float64)
    assert breaks(lambda t: dropout(t, 0.1) * 2 + dropout(t, 0.2), x) == 0
    # the numba mask stays outside: one break a call, as before
    assert breaks(lambda t: dropout(t, 0.1) * 2 + dropout(t, 0.2), x.float()) == 2


def test_a_gpt2_forward_without_padding_is_one_graph():
    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    model = GPT2Model(cfg).eval()
    ids = torch.randint(0, 64, (2, 16))
    assert breaks(model, ids) == 0
    # the context check still holds, with and without padding
    with pytest.raises(Exception, match="exceed the model's context of 32"):
        model(torch.randint(0, 64, (1, 33)))
    with pytest.raises(Exception, match="exceed the model's context of 32"):
        model(torch.randint(0, 64, (1, 33)), torch.ones(1, 33))
