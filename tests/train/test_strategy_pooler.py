"""A pooler that the task does not read is not counted as training (issue 40: top_k counted BERT's pooler
as trainable under cls pooling, where no gradient reaches it)."""

import pytest
import torch

from warmstart.models.bert import BertConfig, BertModel
from warmstart.tasks.classification import SequenceClassifier
from warmstart.train.strategies import StrategyConfig, apply_strategy


def unit(pooling: str) -> SequenceClassifier:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)  # fmt: skip
    return SequenceClassifier(BertModel(config), ["a", "b"], pooling=pooling)


@pytest.mark.parametrize("strategy", ["top_k", "full"])
@pytest.mark.parametrize("pooling", ["cls", "mean", "pooler"])
def test_the_pooler_trains_only_when_the_task_reads_it(strategy, pooling):
    u = unit(pooling)
    report = apply_strategy(u, StrategyConfig(strategy=strategy, top_k=1))
    batch = {"input_ids": torch.randint(5, 100, (2, 8)), "attention_mask": torch.ones(2, 8),
             "labels": torch.tensor([0, 1])}  # fmt: skip
    u(batch)[0].backward()
    got_gradient = sum(p.numel() for p in u.parameters() if p.grad is not None)
    assert report["trainable"] == got_gradient  # what is counted is what learns
    assert any(p.grad is not None for p in u.encoder.pooler.parameters()) == (pooling == "pooler")
