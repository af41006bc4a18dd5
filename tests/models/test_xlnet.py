"""XLNet: equal to transformers' XLNetModel and XLNetLMHeadModel on the same weights (exported by the hub's
key map, and imported by `warmstart import`) for every input the model takes: padding, segments, the
permutation LM's perm_mask and target_mapping (the query stream), memory carried across segments, backward
positions (bi_data), clamped distances, Transformer-XL's causal attention; parameter counts equal to
transformers' at every preset; every weight trains."""

import pytest
import torch

from tests.helpers.hub import hf_dir, load_unit
from tests.helpers.models import count, preset_model
from warmstart.errors import WarmstartError
from warmstart.hub.convert import import_hf
from warmstart.hub.families import FAMILIES
from warmstart.hub.families.configs import config_from_hf, config_to_hf
from warmstart.hub.tensors import to_hf_state
from warmstart.models.tiny import tiny
from warmstart.models.xlnet import XLNetConfig, XLNetModel
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
TOL = 1e-4
FAM = FAMILIES["xlnet"]
B, T, P, V = 2, 14, 5, 120


def wide(model: XLNetModel) -> XLNetModel:
    """Matrices drawn wider than the initialisation (std 0.3), every vector (norms, biases, the LM bias)
    moved by noise, as the shared family tests do: a weight in the wrong place shows."""
    with torch.no_grad():
        for t in [*model.parameters(), model.lm_bias]:
            t.normal_(0, 0.3) if t.dim() > 1 else t.add_(torch.randn_like(t) * 0.1)
    return model.eval()


def tiny_pair(**kw):
    """(ours, transformers' XLNetLMHeadModel) with the same weights, ours exported by `warmstart export`'s
    code (config_to_hf, to_hf_state)."""
    torch.manual_seed(0)
    model = wide(XLNetModel(tiny(XLNetConfig, vocab_size=V, **kw)))
    hf = transformers.XLNetLMHeadModel(
        transformers.XLNetConfig(**config_to_hf("xlnet", model.config, {}, FAM.hf_class))
    ).eval()
    unit_state = {FAM.unit + k: v for k, v in model.state_dict().items()}
    missing, unexpected = hf.load_state_dict(to_hf_state(FAM, model.config, unit_state), strict=False)
    assert not unexpected and missing == ["lm_loss.weight"]
    assert hf.lm_loss.weight.data_ptr() == hf.transformer.word_embedding.weight.data_ptr()  # tied
    return model, hf


def permutation(seed: int = 0, t: int = T, p: int = P):
    """perm_mask (B, t, t) of a random factorisation order (token i sees token j when j comes before it)
    and target_mapping (B, p, t) of the last p tokens in that order, the second text's last row unused."""
    g = torch.Generator().manual_seed(seed)
    rank = torch.stack([torch.randperm(t, generator=g) for _ in range(B)])
    perm_mask = (rank[:, None, :] >= rank[:, :, None]).float()
    target_mapping = torch.zeros(B, p, t).scatter_(2, rank.argsort(-1)[:, -p:, None], 1.0)
    target_mapping[1, -1] = 0
    return perm_mask, target_mapping


def inputs(case: str, t: int = T, seed: int = 1) -> dict:
    g = torch.Generator().manual_seed(seed)
    kw = {"input_ids": torch.randint(0, V, (B, t), generator=g)}
    if "padding" in case:
        kw["attention_mask"] = torch.ones(B, t)
        kw["attention_mask"][1, t - 5 :] = 0
    if "segments" in case:
        kw["token_type_ids"] = (torch.arange(t) >= t // 2).long().expand(B, t)
    if "permutation" in case:
        kw["perm_mask"], kw["target_mapping"] = permutation(t=t)
    elif "targets" in case:
        kw["target_mapping"] = permutation(t=t)[1]
    return kw


def compare(model, hf, kw: dict, mems=None, hf_mems=None):
    """(max |difference| of the states, of the logits, the new memories (ours, transformers'))."""
    with torch.no_grad():
        out = model.streams(**kw, mems=mems)
        theirs = hf(**kw, mems=hf_mems, use_mems=True)
    mine = out.content if out.query is None else out.query
    with torch.no_grad():
        base = hf.transformer(**kw, mems=hf_mems).last_hidden_state  # the query stream given targets
    states = (mine - base).abs().max().item()
    logits = (model.lm_logits(mine) - theirs.logits).abs().max().item()
    return states, logits, out.mems, theirs.mems


CASES = ["plain", "padding", "segments", "padding+segments", "permutation", "permutation+padding+segments"]
CONFIGS = {
    "default": {},
    "bi_data": {"bi_data": True},
    "clamp_len": {"clamp_len": 4},
    "gelu_new": {"ff_activation": "gelu_new"},
}


@pytest.mark.parity
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("case", CASES)
def test_states_and_logits_equal_transformers(case, config):
    model, hf = tiny_pair(**CONFIGS[config])
    states, logits, _, _ = compare(model, hf, inputs(case))
    assert states < TOL and logits < TOL, (states, logits)


@pytest.mark.parity
@pytest.mark.parametrize(
    "config,case",
    [({"mem_len": 10}, "segments"), ({"mem_len": 10, "reuse_len": 8}, "permutation+segments"),
     ({"mem_len": 6, "bi_data": True}, "permutation+padding"), ({}, "permutation"),
     ({"mem_len": 9, "attn_type": "uni"}, "targets+segments"),
     ({"mem_len": 5, "attn_type": "uni", "same_length": True}, "targets")],
)  # fmt: skip
def test_memory_carried_to_the_next_segment_equals_transformers(config, case):
    """Segment 1 plain, segment 2 with its memories (``Streams.mems``, batch first; transformers' are time
    first): the second segment's states, logits and memories equal. (transformers' uni attention with a
    perm_mask fails on batches of more than one: the uni cases take targets alone.)"""
    model, hf = tiny_pair(**config)
    first = inputs("plain", seed=2)["input_ids"]
    with torch.no_grad():
        mems = model.streams(first).mems
        hf_mems = hf.transformer(first, use_mems=True).mems
    states, logits, new, hf_new = compare(model, hf, inputs(case), mems, hf_mems)
    assert states < TOL and logits < TOL, (states, logits)
    assert len(new) == len(hf_new) == model.config.n_layer
    for ours, theirs in zip(new, hf_new):
        assert ours.shape == theirs.transpose(0, 1).shape and not ours.requires_grad
        assert (ours - theirs.transpose(0, 1)).abs().max() < TOL


@pytest.mark.parity
def test_imported_weights_equal_transformers(small_tokenizer, tmp_path):
    """A transformers XLNetLMHeadModel (its LM bias drawn) imported by `warmstart import` gives the query
    stream and logits transformers gives; its config reads back unchanged."""
    tok = Tokenizer.load(small_tokenizer)
    torch.manual_seed(0)
    config = transformers.XLNetConfig(vocab_size=tok.vocab_size, d_model=32, n_layer=2, n_head=4, d_inner=64,
                                      pad_token_id=tok.pad_id)  # fmt: skip
    hf = transformers.XLNetLMHeadModel(config).eval()
    with torch.no_grad():
        hf.lm_loss.bias.normal_()
    unit = load_unit(import_hf(hf_dir(tmp_path / "hf", hf, small_tokenizer), tmp_path / "ws"))
    model = unit.encoder
    assert torch.equal(model.lm_bias, hf.lm_loss.bias)
    ids = torch.randint(0, tok.vocab_size, (B, T))
    perm_mask, target_mapping = permutation()
    with torch.no_grad():
        theirs = hf(ids, perm_mask=perm_mask, target_mapping=target_mapping).logits
        mine = model.lm_logits(model.streams(ids, perm_mask=perm_mask, target_mapping=target_mapping).query)
    assert (mine - theirs).abs().max() < TOL
    back = config_from_hf("xlnet", config_to_hf("xlnet", model.config, {}, FAM.hf_class), {})
    assert back == model.config


@pytest.mark.parametrize("preset", ["xlnet-mini", "xlnet-base-cased", "xlnet-large-cased"])
def test_parameter_counts_equal_transformers(preset):
    """As many parameters as transformers' XLNetModel (116.7M base, 360.3M large at 32,000 tokens); its
    XLNetLMHeadModel adds the LM bias, which warmstart keeps as a buffer (the fused loss holds it fixed)."""
    cfg, model_cls = preset_model(preset, 32000)
    hf_config = transformers.XLNetConfig(**config_to_hf("xlnet", cfg, {}, FAM.hf_class))
    with torch.device("meta"):
        ours = model_cls(cfg)
        base, lm = transformers.XLNetModel(hf_config), transformers.XLNetLMHeadModel(hf_config)
    assert count(ours) == count(base)
    assert count(lm) == count(ours) + ours.lm_bias.numel()


def test_tiny_parameter_count_equals_transformers():
    model, hf = tiny_pair()
    assert count(model) == count(hf.transformer) == count(hf) - V


def test_every_weight_trains_and_dropout_acts_only_in_training():
    torch.manual_seed(0)
    model = XLNetModel(tiny(XLNetConfig, vocab_size=V)).train()
    kw = inputs("permutation+padding+segments")
    out = model.streams(**kw)
    (model.lm_logits(out.query).logsumexp(-1).mean() + out.content.square().mean()).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    assert not torch.equal(model.streams(**kw).query, model.streams(**kw).query)
    model.eval()
    with torch.no_grad():
        assert torch.equal(model.streams(**kw).query, model.streams(**kw).query)
        states = model.hidden_states(kw["input_ids"], kw["attention_mask"], kw["token_type_ids"])
        assert len(states) == model.config.n_layer + 1
        assert torch.equal(states[-1], model(kw["input_ids"], kw["attention_mask"], kw["token_type_ids"]))


def test_initialisation_is_transformers():
    """normal(0, initializer_range): every matrix, attention bias and mask_emb; norms 1, 0; LM bias 0."""
    torch.manual_seed(0)
    model = XLNetModel(XLNetConfig(vocab_size=4000, d_model=256, n_layer=2, n_head=4, d_inner=512))
    for name, p in model.named_parameters():
        if name.endswith("norm.weight"):
            assert torch.equal(p, torch.ones_like(p)), name
        elif name.endswith(("norm.bias", "up.bias", "down.bias")):
            assert not p.any(), name
        else:
            assert abs(p.std().item() - 0.02) < 0.004 and abs(p.mean().item()) < 0.004, name
    assert not model.lm_bias.any()


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"d_model": 30}, "divisible"),
        ({"attn_type": "both"}, "attn_type"),
        ({"ff_activation": "tanh"}, "ff_act"),
    ],
)
def test_bad_configs_are_refused(kw, match):
    with pytest.raises(WarmstartError, match=match):
        XLNetModel(tiny(XLNetConfig, vocab_size=V, **kw))


def test_bi_data_needs_an_even_batch():
    model = XLNetModel(tiny(XLNetConfig, vocab_size=V, bi_data=True))
    with pytest.raises(WarmstartError, match="even batch"):
        model(torch.zeros(3, 5, dtype=torch.long))
