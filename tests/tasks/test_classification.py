"""Sequence classification heads: losses and streamed metrics against reference computations."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers.shapes import tiny_encoder
from warmstart.errors import WarmstartError
from warmstart.tasks.base import EvalBatches, TaskConfig
from warmstart.tasks.classification import ClassificationTask
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.loop import evaluate


def records(wiki_extracts, labels):
    return [{"text": t[:300], "label": labels[i % len(labels)]} for i, t in enumerate(wiki_extracts[:37])]


@pytest.fixture
def tok(small_tokenizer):
    return Tokenizer.load(small_tokenizer)


def test_single_label_loss_and_macro_f1_match_references(tok, wiki_extracts):
    task = ClassificationTask(TaskConfig(max_length=48))
    recs = records(wiki_extracts, ["a", "b", "c"])
    labels = task.labels(recs)
    feats = task.encode(recs, tok, labels, "test")
    unit = task.build(tiny_encoder(), labels).eval()
    batch = feats.take(range(len(feats)))
    loss, _ = unit(batch)
    with torch.no_grad():
        logits = unit.classifier(unit.encoder(batch["input_ids"], batch["attention_mask"])[:, 0])
    assert torch.allclose(loss, F.cross_entropy(logits, batch["labels"]), atol=1e-6)
    # streamed over batches of 5 == computed at once
    metrics = evaluate(unit, EvalBatches(feats, 5), torch.device("cpu"))
    pred, gold = logits.argmax(-1).numpy(), batch["labels"].numpy()
    f1s = []
    for c in range(3):
        tp = ((pred == c) & (gold == c)).sum()
        p = tp / max((pred == c).sum(), 1)
        r = tp / max((gold == c).sum(), 1)
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    assert metrics["accuracy"] == pytest.approx((pred == gold).mean(), abs=1e-6)
    assert metrics["macro_f1"] == pytest.approx(np.mean(f1s), abs=1e-6)
    assert metrics["loss"] == pytest.approx(float(loss.detach()), abs=1e-5)


def test_multi_label_uses_bce_and_micro_f1(tok, wiki_extracts):
    task = ClassificationTask(TaskConfig(problem="multi_label", max_length=48))
    recs = records(wiki_extracts, ["x|y", "y", "z|x", ["y", "z"]])
    labels = task.labels(recs)
    assert labels == ["x", "y", "z"]
    feats = task.encode(recs, tok, labels, "test")
    batch = feats.take(range(len(feats)))
    assert batch["labels"][0].tolist() == [1.0, 1.0, 0.0] and batch["labels"][3].tolist() == [0.0, 1.0, 1.0]
    unit = task.build(tiny_encoder(), labels).eval()
    loss, stats = unit(batch)
    with torch.no_grad():
        logits = unit.classifier(unit.encoder(batch["input_ids"], batch["attention_mask"])[:, 0])
    assert torch.allclose(loss, F.binary_cross_entropy_with_logits(logits, batch["labels"]), atol=1e-6)
    metrics = evaluate(unit, EvalBatches(feats, 4), torch.device("cpu"))
    pred, gold = (logits > 0).numpy(), batch["labels"].numpy() > 0.5
    tp = (pred & gold).sum()
    p, r = tp / max(pred.sum(), 1), tp / gold.sum()
    assert metrics["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0, abs=1e-6)
    assert metrics["exact_match"] == pytest.approx((pred == gold).all(1).mean(), abs=1e-6)


def test_regression_uses_mse_and_pearson(tok, wiki_extracts):
    task = ClassificationTask(TaskConfig(problem="regression", max_length=48))
    recs = [{"text": t[:200], "label": str(len(t) % 5 + 0.5)} for t in wiki_extracts[:40]]
    feats = task.encode(recs, tok, task.labels(recs), "test")
    unit = task.build(tiny_encoder(), []).eval()
    batch = feats.take(range(len(feats)))
    loss, _ = unit(batch)
    with torch.no_grad():
        pred = unit.classifier(unit.encoder(batch["input_ids"], batch["attention_mask"])[:, 0]).squeeze(-1)
    assert torch.allclose(loss, F.mse_loss(pred, batch["labels"]), atol=1e-5)
    metrics = evaluate(unit, EvalBatches(feats, 7), torch.device("cpu"))
    ref = np.corrcoef(pred.numpy(), batch["labels"].numpy())[0, 1]
    assert metrics["pearson"] == pytest.approx(ref, abs=1e-4)
    with pytest.raises(WarmstartError, match="is not a number"):
        task.encode([{"text": "a", "label": "high"}], tok, [], "test")


def test_sentence_pairs_get_segment_ids(tok):
    task = ClassificationTask(TaskConfig(max_length=32))
    recs = [{"text": "the cat sat", "text_pair": "on the mat", "label": "yes"}] * 2
    batch = task.encode(recs, tok, ["no", "yes"], "test").take([0])
    ids, types = batch["input_ids"][0].tolist(), batch["token_type_ids"][0].tolist()
    assert ids[0] == tok.cls_id and ids.count(tok.sep_id) == 2
    second = ids.index(tok.sep_id) + 1
    assert set(types[:second]) == {0} and set(types[second:]) == {1}
    with pytest.raises(WarmstartError, match="have no second text"):
        task.encode(recs + [{"text": "alone", "label": "no"}], tok, ["no", "yes"], "pairs (train)")


def test_unknown_label_is_a_clear_error(tok):
    task = ClassificationTask(TaskConfig())
    with pytest.raises(WarmstartError, match="labels the model was not trained on: maybe"):
        task.encode([{"text": "a", "label": "maybe"}], tok, ["no", "yes"], "x (test)")


def test_mean_pooling_averages_real_tokens_only(tok, wiki_extracts):
    task = ClassificationTask(TaskConfig(max_length=48, pooling="mean"))
    recs = [{"text": t[: 20 + 25 * i], "label": "ab"[i % 2]} for i, t in enumerate(wiki_extracts[:6])]
    labels = task.labels(recs)
    feats = task.encode(recs, tok, labels, "test")
    unit = task.build(tiny_encoder(), labels).eval()
    batch = feats.take(range(6))
    assert (batch["attention_mask"] == 0).any()  # rows of different lengths: padding to leave out
    with torch.no_grad():
        hidden = unit.encoder(batch["input_ids"], batch["attention_mask"])
        expected = []
        for row, mask in zip(hidden, batch["attention_mask"]):
            expected.append(unit.classifier(row[mask.bool()].mean(0)))
        assert torch.allclose(unit.logits(batch), torch.stack(expected), atol=1e-5)


def test_unknown_pooling_is_a_clear_error(tok):
    with pytest.raises(WarmstartError, match="unknown task.pooling 'sum'"):
        ClassificationTask(TaskConfig(pooling="sum")).build(tiny_encoder(), ["a", "b"])
