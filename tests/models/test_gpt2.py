"""GPT-2 decoder: published parameter counts, outputs equal to transformers on real text, KV cache."""

import pytest
import torch

from tests.helpers.models import count, preset_model, real_ids
from warmstart.models.gpt2 import HF_KEYS, HF_TRANSPOSED, GPT2Config, GPT2Model
from warmstart.models.keymap import from_hf, to_hf

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("name,published", [("gpt2", 124_439_808), ("gpt2-medium", 354_823_168)])
def test_parameter_counts_match_gpt2_and_transformers(name, published):
    cfg, model_cls = preset_model(name, 50257)
    with torch.device("meta"):
        ours = model_cls(cfg)
        theirs = transformers.GPT2Model(
            transformers.GPT2Config(n_embd=cfg.n_embd, n_layer=cfg.n_layer, n_head=cfg.n_head)
        )
    assert count(ours) == count(theirs) == published  # output head tied: no extra parameters


def tiny_pair(vocab: int):
    kw = dict(vocab_size=vocab, n_positions=64, n_embd=64, n_layer=2, n_head=4)
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(**kw, bos_token_id=0, eos_token_id=0)).eval()
    ours = GPT2Model(GPT2Config(**kw)).eval()
    state = from_hf(hf.state_dict(), HF_KEYS, [], 2, "transformer.", HF_TRANSPOSED)
    ours.load_state_dict(state, strict=True)
    return hf, ours


def test_logits_match_transformers_on_real_text_with_left_padding(tokenizer, wiki_extracts):
    hf, ours = tiny_pair(tokenizer.vocab_size)
    ids = real_ids(tokenizer, wiki_extracts[:3], 20)
    mask = torch.ones_like(ids)
    mask[1, :5] = 0  # left padding
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        theirs = hf(ids, attention_mask=mask, position_ids=positions).logits
        mine = ours.lm_logits(ours(ids, mask))
    assert (theirs - mine)[mask.bool()].abs().max() < 1e-4
    assert hf(ids).logits.sub(ours.lm_logits(ours(ids))).abs().max() < 1e-4


def test_key_map_round_trips_and_is_transposed():
    hf, ours = tiny_pair(300)
    back = to_hf(ours.state_dict(), HF_KEYS, [], 2, "transformer.", HF_TRANSPOSED)
    for k, v in back.items():
        assert torch.equal(v, hf.state_dict()[k]), k
    assert ours.layers[0].attn.qkv.weight.shape == (192, 64)  # (out, in): Conv1D's (in, out) transposed


def test_cached_decoding_equals_full_pass(tokenizer, wiki_extracts):
    _, model = tiny_pair(tokenizer.vocab_size)
    ids = real_ids(tokenizer, wiki_extracts[:2], 16)
    mask = torch.ones_like(ids)
    mask[0, :3] = 0
    with torch.no_grad():
        full = model.decode(ids, mask)[0]
        h1, past = model.decode(ids[:, :9], mask[:, :9])
        h2, past = model.decode(ids[:, 9:10], mask[:, :10], past)
        h3, _ = model.decode(ids[:, 10:], mask, past)
    steps = torch.cat([h1, h2, h3], dim=1)
    assert (steps - full)[mask.bool()].abs().max() < 1e-5


def test_context_overflow_is_a_clear_error():
    from warmstart.errors import WarmstartError

    model = GPT2Model(GPT2Config(vocab_size=50, n_positions=8, n_embd=16, n_layer=1, n_head=2))
    with pytest.raises(WarmstartError, match="context of 8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_left_padding_does_not_count_against_the_context():
    model = GPT2Model(GPT2Config(vocab_size=50, n_positions=8, n_embd=16, n_layer=1, n_head=2))
    ids = torch.zeros(2, 10, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[:, :2] = 0  # 8 real tokens per row behind 2 pads: fits the context of 8
    assert model(ids, mask).shape == (2, 10, 16)
