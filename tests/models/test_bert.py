"""BERT encoder: parameter counts against the published sizes, and outputs against transformers."""

import pytest
import torch

from tests.helpers.models import count, preset_model_config
from warmstart.models.bert import HF_FUSED, HF_KEYS, HF_POOLER_KEYS, BertConfig, BertModel
from warmstart.models.keymap import from_hf, to_hf
from warmstart.objectives.mlm import MaskedLM, MLMConfig

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("name,published", [("bert-base", 110e6), ("bert-large", 340e6)])
def test_parameter_counts_match_bert_and_transformers(name, published):
    cfg = preset_model_config(name)
    with torch.device("meta"):
        ours = BertModel(cfg)
        theirs = transformers.BertModel(
            transformers.BertConfig(
                vocab_size=30522,
                hidden_size=cfg.hidden_size,
                num_hidden_layers=cfg.num_hidden_layers,
                num_attention_heads=cfg.num_attention_heads,
                intermediate_size=cfg.intermediate_size,
            )
        )
    assert count(ours) == count(theirs)  # exact, including the pooler
    assert abs(count(ours) - published) / published < 0.015  # the papers round to 110M / 340M


def test_mlm_head_is_tied_and_adds_only_transform_and_bias():
    cfg = preset_model_config("bert-tiny")
    unit = MaskedLM(BertModel(cfg), MLMConfig())
    extra = count(unit) - count(unit.encoder)
    h = cfg.hidden_size
    assert extra == h * h + h + 2 * h + cfg.vocab_size  # dense, LayerNorm, output bias; decoder tied


def tiny_pair(pre_ln=False):
    cfg = BertConfig(
        vocab_size=500,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=64,
        pre_ln=pre_ln,
    )
    hf = transformers.BertModel(
        transformers.BertConfig(
            vocab_size=500,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=64,
            attn_implementation="eager",
        )
    ).eval()
    ours = BertModel(cfg).eval()
    state = from_hf(hf.state_dict(), HF_KEYS + HF_POOLER_KEYS, HF_FUSED, cfg.num_hidden_layers)
    ours.load_state_dict(state)
    return ours, hf


def test_hidden_states_match_transformers_with_padding():
    torch.manual_seed(0)
    ours, hf = tiny_pair()
    ids = torch.randint(5, 500, (3, 20))
    mask = torch.ones(3, 20, dtype=torch.long)
    mask[1, 12:] = 0
    mask[2, 5:] = 0
    types = torch.zeros(3, 20, dtype=torch.long)
    types[:, 10:] = 1
    with torch.no_grad():
        a = ours(ids, mask, types)
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=types)
    keep = mask.bool()
    assert (a[keep] - ref.last_hidden_state[keep]).abs().max() < 1e-5
    assert (ours.pool(a) - ref.pooler_output).abs().max() < 1e-5


def test_key_map_round_trips():
    ours, hf = tiny_pair()
    back = to_hf(ours.state_dict(), HF_KEYS + HF_POOLER_KEYS, HF_FUSED, 2)
    theirs = hf.state_dict()
    assert set(back) == {k for k in theirs if "position_ids" not in k}
    assert all(torch.equal(back[k], theirs[k]) for k in back)


def test_pre_ln_option_changes_the_block_and_adds_a_final_norm():
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        pre_ln=True,
    )
    model = BertModel(cfg)
    assert model.final_norm is not None
    out = model(torch.randint(0, 100, (2, 10)))
    assert out.shape == (2, 10, 32)
    assert torch.allclose(out.mean(-1), torch.zeros(2, 10), atol=1e-5)  # final LayerNorm output
