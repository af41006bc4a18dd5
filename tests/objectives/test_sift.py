"""SiFT (sift.*): the symmetric KL, the perturbation on the normalised embeddings (scale invariant), the
ascent step, and the masked-LM unit with it: off (weight 0) is the plain loss exactly."""

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.shapes import tiny_bert_config
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertModel
from warmstart.models.gpt2 import GPT2Config, GPT2Model
from warmstart.objectives.clm import CausalLM
from warmstart.objectives.mlm import IGNORE, MaskedLM, MLMConfig
from warmstart.objectives.sift import SiftConfig, attach, perturbed, sift_penalty, symmetric_kl


def test_symmetric_kl_is_both_kls_added_zero_on_equal_rows_and_never_negative():
    torch.manual_seed(0)
    p, q = torch.randn(50, 7) * 3, torch.randn(50, 7) * 3
    lp, lq = F.log_softmax(p, -1), F.log_softmax(q, -1)
    reference = F.kl_div(lq, lp, log_target=True, reduction="none").sum(-1)  # KL(p || q)
    reference = reference + F.kl_div(lp, lq, log_target=True, reduction="none").sum(-1)  # + KL(q || p)
    torch.testing.assert_close(symmetric_kl(p, q), reference)
    assert torch.equal(symmetric_kl(p, p), torch.zeros(50))
    near = p + 1e-4 * torch.randn_like(p)  # rounding cannot make a term negative: exp is monotonic
    assert (symmetric_kl(p, near) >= 0).all()


def encoder(seed=0):
    torch.manual_seed(seed)
    return BertModel(
        tiny_bert_config(relative_attention=True, position_biased_input=False, position_buckets=8)
    )


def test_the_perturbation_is_relative_to_the_normalised_embeddings_whatever_their_scale():
    """Scaling the embedding tables (word and segment: the sum the LayerNorm reads) by 10 leaves the perturbed
    outputs, and SiFT's penalty, as they were: the perturbation is added after standardising the sum."""
    ids = torch.randint(5, 1000, (2, 12))
    delta = 0.05 * torch.randn(2, 12, 32)
    outs, penalties = [], []
    for scale in (1.0, 10.0):
        model = encoder().eval()
        with torch.no_grad():
            model.embeddings.word.weight.mul_(scale)
            model.embeddings.token_type.weight.mul_(scale)
        with torch.no_grad(), perturbed(model, lambda z: delta):
            outs.append(model(ids))
        clean = model(ids)
        torch.manual_seed(1)
        penalty = sift_penalty(model, lambda m=model: m(ids), clean, SiftConfig(weight=1), mse)
        penalties.append(float(penalty.detach()))
    torch.testing.assert_close(outs[0], outs[1], atol=1e-4, rtol=1e-4)
    assert penalties[0] > 0 and penalties[1] == pytest.approx(penalties[0], rel=1e-3)
    # the perturbation changes the output by the same amount at both scales, and by more when it is larger
    with torch.no_grad(), perturbed(model, lambda z: 4 * delta):
        assert (model(ids) - clean).abs().mean() > 2 * (outs[1] - clean).abs().mean()


def mse(a, b):
    return (a - b).pow(2).flatten(1).mean(-1)


def test_the_ascent_step_raises_the_divergence_that_random_noise_gives():
    model = encoder().eval()  # no dropout: the divergence comes from the perturbation alone
    ids = torch.randint(5, 1000, (4, 16))
    clean = model(ids)
    values = {}
    for steps in (0, 1):
        torch.manual_seed(3)  # the same initial noise
        cfg = SiftConfig(weight=1, noise=0.01, ascent_steps=steps, step_size=0.05)
        values[steps] = float(sift_penalty(model, lambda: model(ids), clean, cfg, mse).detach())
    assert values[1] > 1.5 * values[0] > 0


def mlm_unit(seed=0):
    torch.manual_seed(seed)
    u = MaskedLM(encoder(seed), MLMConfig())
    return u.train()


def mlm_batch():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 1000, (3, 20), generator=g)
    labels = torch.full_like(ids, IGNORE)
    labels[:, 1::3] = ids[:, 1::3]
    return {"input_ids": ids, "labels": labels}


def test_weight_zero_is_the_plain_loss_and_a_positive_weight_adds_a_penalty_that_trains_the_embeddings():
    batch = mlm_batch()
    plain, with_zero, with_sift = mlm_unit(), mlm_unit(), mlm_unit()
    attach(with_zero, SiftConfig(weight=0.0))
    attach(with_sift, SiftConfig(weight=2.0))
    assert with_zero.sift is None and with_sift.sift is not None
    losses = {}
    for name, u in (("plain", plain), ("zero", with_zero), ("sift", with_sift)):
        torch.manual_seed(7)  # the same dropout draws
        losses[name] = u(batch)
    assert torch.equal(losses["zero"][0], losses["plain"][0])
    assert losses["zero"][1].keys() == losses["plain"][1].keys()
    loss, stats = losses["sift"]
    penalty_sum, n = stats["sift"]
    assert n == (batch["labels"] != IGNORE).sum() and penalty_sum >= 0
    torch.testing.assert_close(loss, losses["plain"][0] + 2.0 * penalty_sum / n)
    # the penalty alone trains the word embeddings (through the clean and the perturbed pass)
    hidden, _ = with_sift.encode(batch)
    with_sift.sift_term(batch, hidden, {}).backward()
    grad = with_sift.encoder.embeddings.word.weight.grad
    assert grad is not None and grad[batch["input_ids"].unique()].abs().sum() > 0
    # evaluation never adds it
    with torch.no_grad():
        assert "sift" not in with_sift.eval()(batch)[1]


def test_sift_is_refused_where_it_has_no_meaning():
    gpt2 = CausalLM(GPT2Model(GPT2Config(vocab_size=100, n_layer=1, n_embd=16, n_head=2, n_positions=16)))
    with pytest.raises(WarmstartError, match="sift.weight"):
        attach(gpt2, SiftConfig(weight=1.0))
    attach(gpt2, SiftConfig(weight=0.0))  # off: nothing to refuse
    with pytest.raises(WarmstartError, match="negative"):
        SiftConfig(weight=-1.0)
