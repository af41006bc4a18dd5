"""Fused linear cross-entropy against the plain head (logits, then F.cross_entropy): loss and gradients in
fp32 and fp64, tied embeddings, bf16 autocast, all-ignored labels, no-grad and a mean loss."""

import pytest
import torch
import torch.nn.functional as F

from warmstart.objectives.fused_ce import linear_cross_entropy

IGNORE = -100
V, H = 301, 32


def inputs(seed, shape=(3, 17), dtype=torch.float32, ignored=0.2):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(*shape, H, generator=g, dtype=dtype).requires_grad_()
    weight = (torch.randn(V, H, generator=g, dtype=dtype) * 0.3).requires_grad_()
    labels = torch.randint(0, V, shape, generator=g)
    labels[torch.rand(shape, generator=g) < ignored] = IGNORE
    return hidden, weight, labels


def reference(hidden, weight, labels):
    logits = hidden @ weight.T
    flat = logits.reshape(-1, V)
    return F.cross_entropy(
        flat.float() if flat.dtype != torch.float64 else flat,
        labels.reshape(-1),
        reduction="sum",
        ignore_index=IGNORE,
    )


def grads(loss, *tensors):
    return torch.autograd.grad(loss, tensors)


def rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


@pytest.mark.parametrize("chunk_rows", [1, 7, 16, 1000, None])
def test_matches_cross_entropy_fp32(chunk_rows):
    hidden, weight, labels = inputs(0)
    loss, n = linear_cross_entropy(hidden, weight, labels, chunk_rows=chunk_rows)
    ref = reference(hidden, weight, labels)
    assert n == int((labels != IGNORE).sum()) and 0 < n < labels.numel()
    assert loss.dtype == torch.float32 and loss.dim() == 0
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=0)
    got = grads(loss, hidden, weight)
    for a, b in zip(got, grads(ref, hidden, weight)):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert float(got[0][labels == IGNORE].abs().max()) == 0.0


@pytest.mark.parametrize("bf16", [False, True])
def test_a_trainable_bias_gets_the_plain_heads_gradient(bf16):
    hidden, weight, labels = inputs(5)
    bias = (torch.randn(V) * 0.5).requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss, _ = linear_cross_entropy(hidden, weight, labels, bias=bias, chunk_rows=7)
        logits = (hidden @ weight.T).reshape(-1, V).float() + bias  # the plain head: fp32 bias on the logits
    ref = F.cross_entropy(logits, labels.reshape(-1), reduction="sum", ignore_index=IGNORE)
    tol = 2e-2 if bf16 else 1e-5
    assert rel(loss, ref) < tol
    for a, b in zip(grads(loss, hidden, weight, bias), grads(ref, hidden, weight, bias)):
        assert rel(a, b) < tol
    frozen, _ = linear_cross_entropy(hidden, weight, labels, bias=bias.detach())
    assert frozen.grad_fn is not None and len(grads(frozen, hidden, weight)) == 2


@pytest.mark.parametrize("chunk_rows", [1, 7, 1000])
def test_matches_cross_entropy_fp64(chunk_rows):
    hidden, weight, labels = inputs(1, shape=(2, 5, 4), dtype=torch.float64)
    loss, _ = linear_cross_entropy(hidden, weight, labels, chunk_rows=chunk_rows)
    ref = reference(hidden, weight, labels)
    torch.testing.assert_close(loss, ref, rtol=1e-10, atol=0)
    for got, want in zip(grads(loss, hidden, weight), grads(ref, hidden, weight)):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_tied_embedding_weight():
    torch.manual_seed(2)
    ids = torch.randint(0, V, (4, 9))
    labels = ids.roll(-1, dims=1)
    labels[:, -1] = IGNORE
    weight = torch.nn.Parameter(torch.randn(V, H) * 0.3)
    proj = torch.nn.Linear(H, H)
    loss, n = linear_cross_entropy(proj(F.embedding(ids, weight)), weight, labels, chunk_rows=5)
    (loss / n).backward()
    fused_w, fused_proj = weight.grad.clone(), proj.weight.grad.clone()
    weight.grad = proj.weight.grad = None
    (reference(proj(F.embedding(ids, weight)), weight, labels) / n).backward()
    torch.testing.assert_close(fused_w, weight.grad, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(fused_proj, proj.weight.grad, rtol=1e-5, atol=1e-7)


def test_bf16_autocast_matches_the_autocast_head():
    hidden, weight, labels = inputs(3, shape=(4, 33))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = linear_cross_entropy(hidden, weight, labels, chunk_rows=16)
        ref = reference(hidden, weight, labels)
    assert loss.dtype == torch.float32
    assert abs(loss.item() / ref.item() - 1) < 1e-2
    got, want = grads(loss, hidden, weight), grads(ref, hidden, weight)
    assert got[0].dtype == torch.float32 and got[1].dtype == torch.float32
    for a, b in zip(got, want):
        assert rel(a, b) < 2e-2
    # the matmuls did run in bf16: the loss is much nearer the autocast head than the fp32 one
    exact = reference(hidden, weight, labels)
    assert abs(loss.item() - ref.item()) * 10 < abs(loss.item() - exact.item())


def test_all_ignored():
    hidden, weight, labels = inputs(4, ignored=1.1)
    loss, n = linear_cross_entropy(hidden, weight, labels)
    assert n == 0 and loss.item() == 0.0 and loss.dtype == torch.float32
    (loss / max(n, 1)).backward()
    assert float(hidden.grad.abs().max()) == 0.0 and float(weight.grad.abs().max()) == 0.0


def test_no_grad_returns_the_same_loss_and_keeps_nothing():
    hidden, weight, labels = inputs(5)
    with_grad, n = linear_cross_entropy(hidden, weight, labels, chunk_rows=7)
    with torch.no_grad():
        without, n2 = linear_cross_entropy(hidden, weight, labels, chunk_rows=7)
    assert n == n2 and not without.requires_grad and without.grad_fn is None
    torch.testing.assert_close(without, with_grad.detach(), rtol=0, atol=0)
    frozen, _ = linear_cross_entropy(hidden.detach(), weight.detach(), labels)
    assert frozen.grad_fn is None


def test_mean_loss_scales_the_gradient():
    hidden, weight, labels = inputs(6)
    loss, n = linear_cross_entropy(hidden, weight, labels, chunk_rows=10)
    ref = reference(hidden, weight, labels)
    for got, want in zip(grads(3.0 * loss / n, hidden, weight), grads(3.0 * ref / n, hidden, weight)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_only_the_hidden_needs_grad():
    hidden, weight, labels = inputs(7)
    loss, _ = linear_cross_entropy(hidden, weight.detach(), labels, chunk_rows=9)
    (got,) = grads(loss, hidden)
    (want,) = grads(reference(hidden, weight.detach(), labels), hidden)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- the units' heads: fused equals plain
def _family(name: str):
    from warmstart.models.bart import BartConfig, BartModel
    from warmstart.models.gpt2 import GPT2Config, GPT2Model
    from warmstart.models.t5 import T5Config, T5Model

    torch.manual_seed(0)
    if name == "gpt2":
        return GPT2Model(GPT2Config(vocab_size=97, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))  # fmt: skip
    if name.startswith("t5"):
        cfg = T5Config(vocab_size=97, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                       dropout_rate=0.0, tie_word_embeddings=name == "t5-tied")  # fmt: skip
        return T5Model(cfg)
    cfg = BartConfig(vocab_size=97, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                     decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                     max_position_embeddings=32, dropout=0.0)  # fmt: skip
    model = BartModel(cfg)
    model.final_logits_bias.normal_(0, 1.0)  # zero in a fresh model: make the constant bias count
    return model


def _unit_and_batch(name: str):
    from warmstart.objectives.clm import CausalLM
    from warmstart.objectives.lm_loss import Seq2SeqLM

    model = _family(name)  # dropout off: the two passes must see the same network
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 97, (3, 12), generator=g)
    if name == "gpt2":
        return CausalLM(model).train(), {"input_ids": ids}
    labels = torch.randint(3, 97, (3, 7), generator=g)
    labels[0, 5:] = -100
    dec = torch.cat([torch.full((3, 1), 2), labels[:, :-1].clamp(min=0)], 1)
    batch = {"input_ids": ids, "decoder_input_ids": dec, "labels": labels}
    return Seq2SeqLM(model).train(), batch


@pytest.mark.parametrize("bf16", [False, True])
@pytest.mark.parametrize("name", ["gpt2", "t5-tied", "t5-untied", "bart"])
def test_training_loss_of_each_family_equals_the_plain_head(name, bf16):
    unit, batch = _unit_and_batch(name)
    params = [p for p in unit.parameters() if p.requires_grad]

    def run():
        unit.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, stats = unit(batch)
        loss.backward()
        return loss.detach(), stats["loss"], [p.grad.clone() for p in params]

    fused = run()
    unit.eval()  # the plain path (full logits + token_loss); dropout is off, so the network is the same
    plain = run()
    assert fused[1][1] == plain[1][1]  # the same count of predicted positions
    if not bf16:
        torch.testing.assert_close(fused[0], plain[0], rtol=1e-5, atol=1e-6)
        for got, want in zip(fused[2], plain[2]):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        return
    # bf16: both round the same products to bf16, in different places; compare whole tensors
    torch.testing.assert_close(fused[0], plain[0], rtol=5e-3, atol=0)
    for got, want in zip(fused[2], plain[2]):
        assert float((got - want).norm()) <= 2e-2 * float(want.norm()) + 1e-7


def test_the_logits_buffer_is_kept_between_calls_and_grows():
    from warmstart.objectives.fused_ce import logits_buffer

    first = logits_buffer(64, V, torch.bfloat16, torch.device("cpu"))
    again = logits_buffer(32, V, torch.bfloat16, torch.device("cpu"))
    assert again.data_ptr() == first.data_ptr() and again.shape == (32, V)
    larger = logits_buffer(128, V, torch.bfloat16, torch.device("cpu"))
    assert larger.shape == (128, V) and larger.is_contiguous()
    assert logits_buffer(16, V, torch.float32, torch.device("cpu")).dtype == torch.float32
    # calls of other sizes in between leave each call's loss and gradients those of the plain head
    for seed, shape in ((7, (2, 9)), (8, (5, 40)), (9, (1, 3)), (7, (2, 9))):
        hidden, weight, labels = inputs(seed, shape)
        loss, _ = linear_cross_entropy(hidden, weight, labels)
        ref = reference(hidden, weight, labels)
        torch.testing.assert_close(loss, ref, rtol=1e-5, atol=0)
        for a, b in zip(grads(loss, hidden, weight), grads(ref, hidden, weight)):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.skipif(__import__("shutil").which("g++") is None, reason="inductor needs a C++ compiler")
def test_a_compiled_model_runs_the_head_as_written_and_gets_its_gradients():
    """train.compile: dynamo cannot trace the head's kept buffer and in-forward gradients; the head is kept
    out of the graph (a graph break), and loss and gradients stay the eager ones, at two lengths (bf16)."""
    from warmstart.objectives import fused_ce

    fused_ce._BUFFERS.__dict__.clear()  # no kept buffer yet: the compiled call makes it
    torch.manual_seed(0)
    lin, weight = torch.nn.Linear(H, H), torch.nn.Parameter(torch.randn(V, H) * 0.1)

    def loss_of(x, labels):
        loss, n = linear_cross_entropy(F.gelu(lin(x)), weight, labels)
        return loss / n

    compiled = torch.compile(loss_of)
    for length in (40, 70):
        x, labels = torch.randn(4, length, H), torch.randint(0, V, (4, length))
        labels[:, ::3] = IGNORE
        results = []
        for fn in (compiled, loss_of):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = fn(x, labels)
            results.append((loss.detach(), *grads(loss, weight, lin.weight)))
        for a, b in zip(*results):
            torch.testing.assert_close(a, b, rtol=1e-2, atol=1e-3)
