"""Encoder variants by config: ALBERT (factorized embeddings, shared layers) and ELECTRA's shapes."""

import pytest
import torch

from tests.helpers.models import count, preset_model_config
from tests.helpers.shapes import tiny_bert_config
from warmstart.models.bert import BertConfig, BertModel

transformers = pytest.importorskip("transformers")


def preset_model(name: str, vocab: int) -> BertConfig:
    return preset_model_config(name, vocab_size=vocab)


@pytest.mark.parametrize("name,published", [("albert-base", 12e6), ("albert-large", 18e6)])
def test_albert_parameter_counts_match_the_paper_and_transformers(name, published):
    cfg = preset_model(name, 30000)
    with torch.device("meta"):
        ours = BertModel(cfg)
        theirs = transformers.AlbertModel(
            transformers.AlbertConfig(
                vocab_size=30000,
                embedding_size=cfg.embedding_size,
                hidden_size=cfg.hidden_size,
                num_hidden_layers=cfg.num_hidden_layers,
                num_attention_heads=cfg.num_attention_heads,
                intermediate_size=cfg.intermediate_size,
            )
        )
    assert count(ours) == count(theirs)  # exact: embeddings, E -> H mapping, one shared block, pooler
    assert abs(count(ours) - published) / published < 0.05  # the paper rounds to 12M / 18M


def test_electra_small_discriminator_matches_transformers_count():
    cfg = preset_model("electra-small", 30522)
    with torch.device("meta"):
        ours = BertModel(cfg)
        theirs = transformers.ElectraModel(
            transformers.ElectraConfig(
                vocab_size=30522,
                embedding_size=128,
                hidden_size=256,
                num_hidden_layers=12,
                num_attention_heads=4,
                intermediate_size=1024,
            )
        )
    assert count(ours) == count(theirs)  # about 13.5M, as published for ELECTRA-Small


def test_albert_layers_are_the_same_tensors_in_every_pass():
    torch.manual_seed(0)
    model = BertModel(tiny_bert_config(num_hidden_layers=4, share_layers=True, embedding_size=16))
    assert len(model.layers) == 1 and all(model.block(i) is model.layers[0] for i in range(4))
    unshared = BertModel(tiny_bert_config(num_hidden_layers=4, embedding_size=16))
    block = sum(p.numel() for p in model.layers[0].parameters())
    assert count(unshared) - count(model) == 3 * block
    # all four passes run the one block: doubling its output projection changes every layer's output
    ids = torch.randint(5, 1000, (2, 12))
    model.eval()
    states = model.hidden_states(ids)
    assert len(states) == 5  # embeddings + 4 layers, though only one block of weights exists
    calls = []
    handle = model.layers[0].register_forward_hook(lambda *a: calls.append(1))
    model(ids)
    handle.remove()
    assert len(calls) == 4
    model(ids).sum().backward()
    assert model.layers[0].attn.qkv.weight.grad.abs().sum() > 0
    assert model.embed_project.weight.shape == (32, 16)


def test_factorized_embeddings_have_width_e():
    model = BertModel(tiny_bert_config(embedding_size=16))
    assert model.word_embeddings.weight.shape == (1000, 16)
    assert model(torch.randint(5, 1000, (2, 7))).shape == (2, 7, 32)


def test_roberta_has_no_segments_and_ignores_segment_ids():
    cfg = preset_model("roberta-mini", 600)
    assert cfg.type_vocab_size == 1
    model = BertModel(cfg).eval()
    ids = torch.randint(5, 600, (2, 9))
    types = torch.ones_like(ids)  # a sentence-pair batch: segment ids are ignored, not an index error
    assert torch.equal(model(ids, token_type_ids=types), model(ids))


def test_deberta_attention_encoder_uses_one_relative_table_and_no_absolute_positions():
    torch.manual_seed(0)
    cfg = tiny_bert_config(relative_attention=True, position_biased_input=False, position_buckets=8)
    cfg.max_relative_positions = 32
    model = BertModel(cfg).eval()
    assert model.rel is not None and type(model.layers[0].attn).__name__ == "DisentangledSelfAttention"
    ids = torch.randint(5, 1000, (2, 10))
    out = model(ids)
    with torch.no_grad():
        model.embeddings.position.weight.normal_()  # not read: positions enter only through attention
    assert torch.equal(model(ids), out)
    with torch.no_grad():
        model.rel.embed.weight.add_(torch.randn_like(model.rel.embed.weight))
    assert not torch.allclose(model(ids), out)  # the table is what tells positions apart
