"""LoRALinear: starts equal to its base, trains only A and B, merges into an equivalent plain Linear."""

import math

import pytest
import torch
from torch import nn

from tests.helpers.shapes import tiny_bert_config
from warmstart.models.bert import BertModel
from warmstart.nn.lora import LoRALinear, add_lora, merge_lora


def tiny_bert() -> BertModel:
    torch.manual_seed(0)
    return BertModel(tiny_bert_config(200, num_hidden_layers=4, max_position_embeddings=64)).eval()


def test_fresh_adapter_equals_base_and_only_a_b_train():
    torch.manual_seed(0)
    base = nn.Linear(16, 24)
    lora = LoRALinear(base, rank=4, alpha=8, dropout=0.0)
    assert lora.lora_a.shape == (4, 16) and lora.lora_b.shape == (24, 4)
    assert torch.count_nonzero(lora.lora_b) == 0 and torch.count_nonzero(lora.lora_a) == 4 * 16
    assert lora.lora_a.abs().max() <= 1 / math.sqrt(16)  # kaiming-uniform bound with a=sqrt(5)
    assert lora.scale == 2.0
    x = torch.randn(5, 16)
    assert torch.equal(lora(x), base(x))
    assert [n for n, p in lora.named_parameters() if p.requires_grad] == ["lora_a", "lora_b"]


def test_dropout_acts_on_the_adapter_input_only():
    lora = LoRALinear(nn.Linear(8, 8), rank=2, alpha=2, dropout=1.0)  # drops the whole adapter input
    with torch.no_grad():
        lora.lora_b.normal_()
    x = torch.randn(3, 8)
    assert torch.equal(lora.train()(x), lora.base(x))
    assert not torch.allclose(lora.eval()(x), lora.base(x))


def test_merged_linear_computes_the_same_function():
    lora = LoRALinear(nn.Linear(16, 24), rank=4, alpha=16)
    with torch.no_grad():
        lora.lora_b.normal_(std=0.1)
    merged = lora.merged()
    x = torch.randn(7, 16)
    assert type(merged) is nn.Linear
    assert (merged(x) - lora(x)).abs().max().item() < 1e-5
    assert not merged.weight.requires_grad  # frozen like the base it replaces


def test_add_lora_wraps_named_projections_and_merge_restores_plain_names():
    model = tiny_bert()
    plain_keys = list(model.state_dict())
    assert add_lora(model, ["qkv", "out"], rank=4, alpha=8) == 2 * 4
    assert add_lora(model, ["qkv", "out"], rank=4, alpha=8) == 0  # already wrapped
    assert isinstance(model.layers[0].attn.qkv, LoRALinear) and type(model.layers[0].mlp.up) is nn.Linear
    assert "layers.0.attn.qkv.lora_a" in model.state_dict()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, LoRALinear):
                m.lora_b.normal_(std=0.05)
    ids = torch.randint(0, 200, (2, 10))
    with torch.no_grad():
        before = model(ids)
        assert merge_lora(model) == 8
        after = model(ids)
    assert (after - before).abs().max().item() < 1e-5
    assert list(model.state_dict()) == plain_keys
    plain = BertModel(model.config).eval()
    plain.load_state_dict(model.state_dict(), strict=True)
    with torch.no_grad():
        assert torch.equal(plain(ids), after)


def test_rank_below_one_is_refused():
    with pytest.raises(ValueError, match="rank"):
        LoRALinear(nn.Linear(4, 4), rank=0, alpha=1)
