"""Token classification on real silver NER data: sub-word alignment, loss, seqeval-equal metrics, training."""

import random
import warnings

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.shapes import tiny_bert_config
from warmstart.data.ner_silver import build_ner_silver, ner_silver_records
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertModel
from warmstart.tasks.base import EvalBatches, TaskConfig, TrainBatches
from warmstart.tasks.tagging import IGNORE, TaggingTask, entities, entity_counts, with_f1
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.loop import evaluate

seqeval = pytest.importorskip("seqeval.metrics")
from seqeval.metrics.sequence_labeling import get_entities  # noqa: E402


@pytest.fixture(scope="module")
def silver(tmp_path_factory):
    pytest.importorskip("spacy")
    out = build_ner_silver(limit=90, out=tmp_path_factory.mktemp("silver") / "s.conll", progress=False)
    records = list(ner_silver_records(out))
    assert len(records) >= 240
    return records


@pytest.fixture(scope="module")
def tok(small_tokenizer):
    return Tokenizer.load(small_tokenizer)


def tiny_unit(tok, labels, seed=0):
    torch.manual_seed(seed)
    config = tiny_bert_config(tok.vocab_size)
    return TaggingTask(TaskConfig(name="tagging")).build(BertModel(config), labels)


def task(max_length):
    return TaggingTask(TaskConfig(name="tagging", max_length=max_length))


def seqeval_scores(gold, pred):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [f(gold, pred) for f in (seqeval.precision_score, seqeval.recall_score, seqeval.f1_score)]


# ---------------------------------------------------------------- entities and metrics vs seqeval

POOL = ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG", "B-ORG", "E-PER", "S-LOC", "B", "I"]


def random_tags(rng, n):
    return [rng.choice(POOL) for _ in range(n)]


def test_entities_equal_seqeval_on_random_and_malformed_tags():
    rng = random.Random(0)
    for _ in range(5000):
        tags = random_tags(rng, rng.randint(0, 14))
        assert entities(tags) == set(get_entities(tags)), tags
    # the classic malformed cases, read as conlleval reads them
    assert entities(["O", "I-PER", "I-PER"]) == {("PER", 1, 2)}
    assert entities(["B-PER", "I-LOC", "I-LOC"]) == {("PER", 0, 0), ("LOC", 1, 2)}
    assert entities(["I-PER", "B-PER"]) == {("PER", 0, 0), ("PER", 1, 1)}


def test_entity_counts_give_seqeval_precision_recall_f1():
    rng = random.Random(1)
    gold, pred = [], []
    for _ in range(400):
        n = rng.randint(1, 12)
        gold.append(random_tags(rng, n))
        pred.append([t if rng.random() < 0.6 else rng.choice(POOL) for t in gold[-1]])
    tp, n_pred, n_gold = map(sum, zip(*(entity_counts(g, p) for g, p in zip(gold, pred))))
    metrics = with_f1({"precision": tp / n_pred, "recall": tp / n_gold})
    assert [metrics[k] for k in ("precision", "recall", "f1")] == pytest.approx(seqeval_scores(gold, pred))
    # nothing predicted: precision, recall and f1 are 0, as in seqeval
    nothing = [["O"] * len(g) for g in gold]
    assert with_f1({"recall": 0.0})["f1"] == 0.0 == seqeval_scores(gold, nothing)[2]


# ---------------------------------------------------------------- labels, encoding, alignment


def test_labels_and_clear_errors(tok):
    records = [
        {"tokens": ["Ada", "Lovelace"], "tags": ["B-PER", "I-PER"]},
        {"tokens": ["x"], "tags": ["I-LOC"]},
    ]
    labels = task(32).labels(records)
    assert labels == ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]
    feats = task(32).encode([*records, {"tokens": [], "tags": []}], tok, labels, "mine (train)")
    assert len(feats) == 2 and feats.skipped == 1
    with pytest.raises(WarmstartError) as err:
        task(32).encode([{"tokens": ["Paris"], "tags": ["B-GPE"]}], tok, labels, "mine (validation)")
    assert "1 of 1 words in mine (validation)" in str(err.value) and "B-GPE (1)" in str(err.value)
    assert "task.unseen_tags=fallback" in err.value.fix and "'O'" in err.value.fix
    with pytest.raises(WarmstartError, match="2 tokens but 1 tags"):
        task(32).encode([{"tokens": ["a", "b"], "tags": ["O"]}], tok, labels, "mine (test)")
    with pytest.raises(WarmstartError, match="too short"):
        task(2).encode(records, tok, labels, "mine (train)")


def test_first_subword_alignment_on_real_multi_piece_words(silver, tok):
    labels = task(128).labels(silver)
    feats = task(128).encode(silver[:60], tok, labels, "silver")
    multi = 0
    for row, record in enumerate(silver[:60]):
        ids, token_labels, starts = feats.ids[row], feats.token_labels[row], feats.starts[row]
        if len(ids) == 128:
            continue  # truncated: see the tests below
        assert ids[0] == tok.cls_id and ids[-1] == tok.sep_id
        assert token_labels[0] == token_labels[-1] == IGNORE
        for word, tag, start in zip(record["tokens"], record["tags"], starts):
            pieces = tok.encode(word)
            assert ids[start : start + len(pieces)] == pieces
            assert token_labels[start] == labels.index(tag)
            assert all(x == IGNORE for x in token_labels[start + 1 : start + len(pieces)])
            assert not tok.id_to_token(ids[start]).startswith("##")
            if word.isalpha():  # punctuation inside a word ("U.S.") starts new pieces without "##"
                assert all(tok.id_to_token(i).startswith("##") for i in pieces[1:])
                multi += len(pieces) >= 3
        assert sum(x != IGNORE for x in token_labels) == len(record["tokens"])
    assert multi > 50  # a 1,000-token vocabulary splits many real words into 3+ pieces


def reference_positions(tok, tokens, max_length):
    """First sub-word positions built independently: 1 ([CLS]) + the pieces of the words before."""
    positions, at = [], 1
    for word in tokens:
        if at < max_length - 1:  # room is left for [SEP]
            positions.append(at)
        at += len(tok.encode(word))
    return positions


def test_loss_equals_plain_cross_entropy_on_first_subwords(silver, tok):
    labels = task(24).labels(silver)
    unit = tiny_unit(tok, labels).eval()
    records = silver[:16]
    batch = task(24).encode(records, tok, labels, "silver").take(range(16))
    with torch.no_grad():
        loss, stats = unit(batch)
        logits = unit.logits(batch)
    picked, targets = [], []
    for row, record in enumerate(records):
        positions = reference_positions(tok, record["tokens"], 24)
        picked.append(logits[row, positions])
        targets += [labels.index(t) for t in record["tags"][: len(positions)]]
    reference = F.cross_entropy(torch.cat(picked), torch.tensor(targets))
    assert float(loss) == pytest.approx(float(reference), rel=1e-5)
    assert int(stats["loss"][1]) == len(targets) < sum(len(r["tokens"]) for r in records)  # some were cut


def test_truncated_words_count_as_missed_entities(tok):
    words = ("the treaty was signed in Paris by Ada Lovelace and Charles Babbage " * 3).split()
    tags = ["O"] * len(words)
    for i, w in enumerate(words):
        if w in ("Ada", "Charles"):
            tags[i], tags[i + 1] = "B-PERSON", "I-PERSON"
    record = {"tokens": words, "tags": tags}
    labels = task(16).labels([record])
    batch = task(16).encode([record], tok, labels, "x").take([0])
    assert (batch["word_starts"][0] < 0).sum() > len(words) // 2
    unit = tiny_unit(tok, labels).eval()
    with torch.no_grad():
        torch.nn.init.zeros_(unit.classifier.weight)
        unit.classifier.bias.copy_(torch.tensor([-9.0 if t == "O" else 0.0 for t in labels]))
        unit.classifier.bias[labels.index("B-PERSON")] = 1.0  # every word that is seen is predicted B-PERSON
        _, stats = unit(batch)
    [predicted] = unit.predict(batch)
    cut = int((batch["word_starts"][0] < 0).sum())
    assert predicted["tags"][-cut:] == ["O"] * cut
    assert stats["recall"][1] == 6  # all six gold people are counted, also those cut off
    assert stats["precision"][1] == len(words) - cut
    p, r, _ = seqeval_scores([tags], [predicted["tags"]])
    assert float(stats["precision"][0]) / stats["precision"][1] == pytest.approx(p)
    assert float(stats["recall"][0]) / stats["recall"][1] == pytest.approx(r)


# ---------------------------------------------------------------- end to end: a tiny model learns


@pytest.fixture(scope="module")
def trained(silver, tok):
    train, held_out = silver[:200], silver[200:]
    labels = task(64).labels(silver)
    feats = task(64).encode(train, tok, labels, "silver (train)")
    unit = tiny_unit(tok, labels)
    batches = TrainBatches(feats, 16, seed=0)
    optimizer = torch.optim.AdamW(unit.parameters(), lr=3e-3)
    before = evaluate(unit, EvalBatches(feats, 64), torch.device("cpu"))["loss"]
    for step in range(250):  # enough that some entities are learned whatever the thread count's rounding
        loss, _ = unit(batches.batch(step))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    after = evaluate(unit, EvalBatches(feats, 64), torch.device("cpu"))["loss"]
    return unit, labels, held_out, before, after


@pytest.mark.slow
def test_training_lowers_the_loss(trained):
    _, _, _, before, after = trained
    assert after < 0.5 * before


@pytest.mark.slow
def test_evaluate_and_predict_agree_with_seqeval(trained, tok):
    unit, labels, held_out, _, _ = trained
    feats = task(32).encode(held_out, tok, labels, "silver (validation)")  # 32: long sentences are cut
    assert any(min(starts) < 0 for starts in feats.starts)
    metrics = evaluate(unit, EvalBatches(feats, 8), torch.device("cpu"))
    predicted = [p for batch in feats.eval_batches(8) for p in unit.eval().predict(batch)]  # in order
    assert [p["tokens"] for p in predicted] == [r["tokens"] for r in held_out]
    gold = [r["tags"] for r in held_out]
    expected = seqeval_scores(gold, [p["tags"] for p in predicted])
    assert [metrics[k] for k in ("precision", "recall", "f1")] == pytest.approx(expected)
    assert metrics["f1"] > 0  # it learned some entities
    words = sum(len(g) for g in gold)
    right = sum(a == b for p, g in zip(predicted, gold) for a, b in zip(p["tags"], g))
    assert metrics["accuracy"] == pytest.approx(right / words)
    for p in predicted:
        assert {(e["type"], e["start"], e["end"]) for e in p["entities"]} == entities(p["tags"])
        assert all(e["text"] == " ".join(p["tokens"][e["start"] : e["end"] + 1]) for e in p["entities"])
