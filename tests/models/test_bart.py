"""BART encoder-decoder: published parameter count, outputs equal to transformers, cache."""

import pytest
import torch

from tests.helpers.models import (
    assert_cache_matches_full_pass,
    assert_logits_match,
    count,
    encoder_decoder_inputs,
    preset_model,
)
from warmstart.models.bart import BartConfig, BartModel, hf_key_map
from warmstart.models.keymap import from_hf_map, to_hf_map

transformers = pytest.importorskip("transformers")


def test_parameter_count_matches_bart_base_and_transformers():
    cfg, model_cls = preset_model("bart-base", 50265)
    with torch.device("meta"):
        ours = model_cls(cfg)
        theirs = transformers.BartModel(
            transformers.BartConfig(
                d_model=768,
                encoder_layers=6,
                decoder_layers=6,
                encoder_attention_heads=12,
                decoder_attention_heads=12,
                encoder_ffn_dim=3072,
                decoder_ffn_dim=3072,
            )
        )
    assert count(ours) == count(theirs) == 139_420_416  # the paper's 140M


def tiny_pair(vocab: int):
    kw = dict(
        vocab_size=vocab,
        d_model=32,
        encoder_layers=2,
        decoder_layers=3,
        encoder_attention_heads=4,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=48,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    hf = transformers.BartForConditionalGeneration(transformers.BartConfig(**kw)).eval()
    ours = BartModel(BartConfig(**kw)).eval()
    state = from_hf_map(hf.state_dict(), hf_key_map(ours.config), "model.")
    state["final_logits_bias"] = hf.final_logits_bias[0]
    ours.load_state_dict(state, strict=True)
    return hf, ours


def test_logits_match_transformers_on_real_text(tokenizer, wiki_extracts):
    hf, ours = tiny_pair(tokenizer.vocab_size)
    ids, mask, dec = encoder_decoder_inputs(tokenizer, wiki_extracts, 30, 20)
    assert_logits_match(hf, ours, ids, mask, dec)


def test_key_map_round_trips():
    hf, ours = tiny_pair(200)
    back = to_hf_map(ours.state_dict(), hf_key_map(ours.config), "model.")
    theirs = hf.state_dict()
    for k, v in back.items():
        assert torch.equal(v, theirs[k]), k


def test_cached_decoding_equals_full_pass(tokenizer, wiki_extracts):
    _, model = tiny_pair(tokenizer.vocab_size)
    assert_cache_matches_full_pass(model, *encoder_decoder_inputs(tokenizer, wiki_extracts, 30, 20))


def test_positions_beyond_the_table_are_a_clear_error():
    from warmstart.errors import WarmstartError

    model = BartModel(
        BartConfig(
            vocab_size=50,
            d_model=16,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=32,
            decoder_ffn_dim=32,
            max_position_embeddings=8,
        )
    )
    with pytest.raises(WarmstartError, match="8 positions"):
        model.encode(torch.zeros(1, 9, dtype=torch.long))
