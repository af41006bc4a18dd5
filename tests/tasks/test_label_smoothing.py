"""task.label_smoothing (transformers' label_smoothing_factor): the training loss of single-label classifiers
and taggers smooths the targets, as torch's cross_entropy(label_smoothing=) and transformers' LabelSmoother
(which skips the ignored positions) compute it; validation reports the plain cross-entropy; other tasks and
a value outside [0, 1) are refused in one line. The transformers flag's hint: tests/cli/test_dialect.py."""

import pytest
import torch
import torch.nn.functional as F

from warmstart.errors import WarmstartError
from warmstart.models.bert import BertConfig, BertModel
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.classification import SequenceClassifier
from warmstart.tasks.extractive_qa import QuestionAnswering
from warmstart.tasks.smoothing import smoothed
from warmstart.tasks.tagging import IGNORE, TokenClassifier


def encoder() -> BertModel:
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=0.0,
                                attention_probs_dropout_prob=0.0))  # fmt: skip


def test_classification_smooths_the_training_loss_only():
    unit = SequenceClassifier(encoder(), ["a", "b", "c"])
    smoothed(unit, 0.1)
    batch = {"input_ids": torch.randint(5, 100, (6, 10)), "labels": torch.tensor([0, 1, 2, 0, 1, 2])}
    logits = unit.logits(batch)
    train_loss, _ = unit.train()(batch)
    assert train_loss.item() == pytest.approx(
        F.cross_entropy(logits, batch["labels"], label_smoothing=0.1).item(), rel=1e-5
    )
    _, stats = unit.eval()(batch)
    plain = F.cross_entropy(logits, batch["labels"], reduction="sum").item()
    assert stats["loss"][0].item() == pytest.approx(plain, rel=1e-5)  # validation: the plain cross-entropy


def test_tagging_smooths_over_the_words_it_scores():
    unit = TokenClassifier(encoder(), ["O", "B-X", "I-X"])
    smoothed(unit, 0.2)
    labels = torch.tensor([[IGNORE, 0, 1, 2, IGNORE], [IGNORE, 1, IGNORE, IGNORE, IGNORE]])
    batch = {"input_ids": torch.randint(5, 100, (2, 5)), "labels": labels}
    logits = unit.logits(batch)
    loss, _ = unit.train()(batch)
    kept = labels.flatten() != IGNORE
    reference = F.cross_entropy(logits.flatten(0, 1)[kept], labels.flatten()[kept], label_smoothing=0.2)
    assert loss.item() == pytest.approx(reference.item(), rel=1e-5)  # LabelSmoother's: ignored positions out


def test_other_tasks_and_bad_values_are_refused():
    with pytest.raises(WarmstartError, match="applies to single-label classification and tagging only"):
        smoothed(SequenceClassifier(encoder(), ["a", "b"], problem="multi_label"), 0.1)
    with pytest.raises(WarmstartError, match="applies to single-label classification and tagging only"):
        smoothed(QuestionAnswering(encoder()), 0.1)
    for bad in (-0.1, 1.0):
        with pytest.raises(WarmstartError, match="label_smoothing must be at least 0 and below 1"):
            TaskConfig(label_smoothing=bad)
