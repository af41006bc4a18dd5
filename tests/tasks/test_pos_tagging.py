"""Tagging with tags that are not BIO (gold part of speech from the Brown corpus): token accuracy, no entity
metrics, the best checkpoint by accuracy, and tags unseen in training refused or mapped as the user says."""

import pytest
import torch

from tests.helpers.shapes import tiny_bert_config
from warmstart.data.catalog import open_dataset
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertModel
from warmstart.tasks.base import EvalBatches, TaskConfig, TrainBatches
from warmstart.tasks.tagging import TaggingTask
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.loop import evaluate


@pytest.fixture(scope="module")
def brown():
    data = open_dataset("brown-pos-universal")
    train = [r for _, r in zip(range(400), data.records("train"))]
    held_out = [r for _, r in zip(range(120), data.records("test"))]
    return train, held_out


def task(**kw):
    return TaggingTask(TaskConfig(name="tagging", max_length=64, **kw))


def test_pos_labels_put_the_most_frequent_tag_first_and_pick_by_accuracy(brown, small_tokenizer):
    train, _ = brown
    labels = task().labels(train)
    assert labels[0] == "NOUN" and "O" not in labels and labels[1:] == sorted(labels[1:])
    unit = task().build(BertModel(tiny_bert_config(Tokenizer.load(small_tokenizer).vocab_size)), labels)
    assert unit.best_metric == ("accuracy", "max") and not unit.bio


@pytest.mark.slow
def test_training_raises_token_accuracy_and_predict_agrees(brown, small_tokenizer):
    train, held_out = brown
    tok = Tokenizer.load(small_tokenizer)
    labels = task().labels(train)
    torch.manual_seed(0)
    unit = task().build(BertModel(tiny_bert_config(tok.vocab_size)), labels)
    feats, test = (
        task().encode(train, tok, labels, "brown (train)"),
        task().encode(held_out, tok, labels, "t"),
    )
    before = evaluate(unit, EvalBatches(test, 64), torch.device("cpu"))
    assert set(before) == {"loss", "accuracy"}  # no entity precision/recall/F1 for POS tags
    optimizer = torch.optim.AdamW(unit.parameters(), lr=3e-3)
    batches = TrainBatches(feats, 16, seed=0)
    for step in range(120):
        loss, _ = unit.train()(batches.batch(step))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    after = evaluate(unit, EvalBatches(test, 64), torch.device("cpu"))
    assert after["accuracy"] > before["accuracy"] + 0.2
    predicted = [p for batch in test.eval_batches(64) for p in unit.eval().predict(batch)]  # in order
    assert all("entities" not in p for p in predicted)
    gold = [t for r in held_out for t in r["tags"]]
    right = sum(a == b for p, r in zip(predicted, held_out) for a, b in zip(p["tags"], r["tags"]))
    assert after["accuracy"] == pytest.approx(right / len(gold))


def test_unseen_tags_are_refused_with_the_count_or_mapped_to_the_fallback(brown, small_tokenizer, capsys):
    train, _ = brown
    tok = Tokenizer.load(small_tokenizer)
    seen = [r for r in train if "X" not in r["tags"]]
    labels = task().labels(seen)
    held = [{"tokens": ["oh", "dear", "me"], "tags": ["X", "ADJ", "X"]}]
    with pytest.raises(WarmstartError) as err:
        task().encode(held, tok, labels, "brown (test)")
    assert "2 of 3 words in brown (test) have 1 tags that the training split lacks: X (2)" in str(err.value)
    feats = task(unseen_tags="fallback").encode(held, tok, labels, "brown (test)")
    assert [labels[i] for i in feats.word_tags[0]] == ["NOUN", "ADJ", "NOUN"]  # the most frequent tag
    assert "mapped to 'NOUN'" in capsys.readouterr().err
    feats = task(unseen_tags="fallback", fallback_tag="ADJ").encode(held, tok, labels, "brown (test)")
    assert [labels[i] for i in feats.word_tags[0]] == ["ADJ", "ADJ", "ADJ"]
    with pytest.raises(WarmstartError, match="fallback_tag 'Q' is not a training tag"):
        task(unseen_tags="fallback", fallback_tag="Q").encode(held, tok, labels, "brown (test)")
    with pytest.raises(WarmstartError, match="unseen_tags must be refuse, fallback or keep"):
        TaskConfig(unseen_tags="map")


def test_an_input_to_predict_needs_no_gold_tags(brown, small_tokenizer):
    """`warmstart predict` on a POS tagger: its inputs carry no tags, so none is "unseen" (a placeholder "O"
    was refused as a tag the training split lacks)."""
    from warmstart.inference.records import parse_record

    labels = task().labels(brown[0])
    tok = Tokenizer.load(small_tokenizer)
    unit = task().build(BertModel(tiny_bert_config(tok.vocab_size)), labels).eval()
    inputs = [
        parse_record('{"tokens": ["The", "dog", "barked"]}', 1, "tagging"),
        parse_record("It rains .", 2, "tagging"),
    ]
    features = task().encode(inputs, tok, labels, "the input")
    with torch.inference_mode():
        predicted = [p for batch in features.eval_batches(8) for p in unit.predict(batch)]
    assert [len(p["tags"]) for p in predicted] == [3, 3]
    assert {t for p in predicted for t in p["tags"]} <= set(labels)
