"""T5 encoder-decoder: published parameter counts, outputs equal to transformers (v1.0 and v1.1), cache."""

import pytest
import torch

from tests.helpers.models import (
    assert_cache_matches_full_pass,
    assert_logits_match,
    count,
    encoder_decoder_inputs,
    preset_model,
)
from warmstart.models.keymap import from_hf_map, to_hf_map
from warmstart.models.t5 import T5Config, T5Model, hf_key_map

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("name,published", [("t5-small", 60_506_624), ("t5-base", 222_903_552)])
def test_parameter_counts_match_t5_and_transformers(name, published):
    cfg, model_cls = preset_model(name, 32128)
    with torch.device("meta"):
        ours = model_cls(cfg)
        theirs = transformers.T5ForConditionalGeneration(
            transformers.T5Config(
                d_model=cfg.d_model,
                d_kv=cfg.d_kv,
                d_ff=cfg.d_ff,
                num_layers=cfg.num_layers,
                num_heads=cfg.num_heads,
            )
        )
    assert count(ours) == count(theirs) == published


def tiny_pair(vocab: int, ff: str, tied: bool):
    kw = dict(
        vocab_size=vocab,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=3,
        num_heads=4,
        feed_forward_proj=ff,
        tie_word_embeddings=tied,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=20,
    )
    torch.manual_seed(0)
    hf = transformers.T5ForConditionalGeneration(transformers.T5Config(**kw, decoder_start_token_id=0)).eval()
    ours = T5Model(T5Config(**kw)).eval()
    ours.load_state_dict(from_hf_map(hf.state_dict(), hf_key_map(ours.config)), strict=True)
    return hf, ours


@pytest.mark.parametrize("ff,tied", [("relu", True), ("gated-gelu", False)])
def test_logits_match_transformers_on_real_text(tokenizer, wiki_extracts, ff, tied):
    hf, ours = tiny_pair(tokenizer.vocab_size, ff, tied)
    ids, mask, dec = encoder_decoder_inputs(
        tokenizer, wiki_extracts, 40, 30
    )  # longer than max_distance: far buckets used
    assert_logits_match(hf, ours, ids, mask, dec)


def test_key_map_round_trips():
    hf, ours = tiny_pair(200, "gated-gelu", False)
    back = to_hf_map(ours.state_dict(), hf_key_map(ours.config))
    theirs = hf.state_dict()
    for k, v in back.items():
        assert torch.equal(v, theirs[k]), k
    assert len(back) == len(ours.state_dict()) + 2 * 2 + 3 * 3  # fused qkv / kv split back into parts


def test_cached_decoding_equals_full_pass(tokenizer, wiki_extracts):
    _, model = tiny_pair(tokenizer.vocab_size, "relu", True)
    assert_cache_matches_full_pass(model, *encoder_decoder_inputs(tokenizer, wiki_extracts, 40, 30))


def test_unknown_feed_forward_is_a_clear_error():
    from warmstart.errors import WarmstartError

    with pytest.raises(WarmstartError, match="feed_forward_proj"):
        T5Model(
            T5Config(vocab_size=50, d_model=16, d_ff=32, num_layers=1, num_heads=2, feed_forward_proj="x")
        )
