"""Span decoding from hand-made logits; SQuAD exact match / F1 against the official script's definitions."""

import re
import string
from collections import Counter

import pytest
import torch

from warmstart.tasks.qa_decode import best_spans, decode, exact_match_score, f1_score, normalize_answer

# Window layout used below: 0 [CLS], 1 question, 2 [SEP], 3..10 context tokens w0..w7, 11 [SEP].
WIDTH, FIRST, N_CONTEXT = 12, 3, 8
CONTEXT = " ".join(f"w{i}" for i in range(N_CONTEXT))  # token i = characters [3i, 3i + 2)


def make_batch(windows: list[int], allow_null: bool = False) -> dict:
    """A batch whose window w belongs to example ``windows[w]``; every window holds the same context."""
    offsets = [None] * FIRST + [(3 * i, 3 * i + 2) for i in range(N_CONTEXT)] + [None]
    mask = torch.tensor([o is not None for o in offsets]).repeat(len(windows), 1)
    examples = {e: {"id": f"q{e}", "context": CONTEXT, "answers": ["w1"]} for e in windows}
    return {
        "context_mask": mask,
        "example_index": windows,
        "offsets": [offsets] * len(windows),
        "examples": examples,
        "allow_null": allow_null,
    }


def logits(*points, windows=1):
    """(windows, WIDTH) logits of -10 with ``(window, context token, value)`` points (token -1: [CLS])."""
    out = torch.full((windows, WIDTH), -10.0)
    for w, token, value in points:
        out[w, 0 if token < 0 else FIRST + token] = value
    return out


def answer(start, end, batch, n_best=20, max_answer_length=30):
    return decode(start, end, batch, n_best, max_answer_length)


def test_end_not_before_start():
    start = logits((0, 5, 9.0), (0, 1, 4.0))
    end = logits((0, 2, 9.0), (0, 6, 3.0))  # best start 5 is after best end 2
    [p] = answer(start, end, make_batch([0]))
    assert (p["answer"], p["score"]) == ("w1 w2", pytest.approx(13.0))  # (1, 2) beats (5, 6) = 12
    assert (p["start"], p["end"]) == (3, 8)


def test_max_answer_length_and_context_only():
    start = logits((0, 0, 9.0), (0, 4, 5.0))
    end = logits((0, 7, 9.0), (0, 5, 5.0))
    start[0, 1] = end[0, 1] = 100.0  # a question token: never part of an answer
    start[0, 11] = end[0, 11] = 100.0  # the final [SEP]
    [p] = answer(start, end, make_batch([0]), max_answer_length=3)
    assert p["answer"] == "w4 w5"  # (0, 7) would score 18 but is 8 tokens long
    [p] = answer(start, end, make_batch([0]), max_answer_length=8)
    assert p["answer"] == CONTEXT


def test_n_best_limits_the_candidates():
    start = logits((0, 5, 9.0), (0, 1, 4.0))
    end = logits((0, 2, 9.0), (0, 6, 3.0))
    [p] = answer(start, end, make_batch([0]), n_best=1)  # only (5, 2): invalid, so no span at all
    assert (p["answer"], p["start"], p["end"]) == ("", -1, -1)


def test_picks_the_best_window_and_keeps_examples_apart():
    start = logits((0, 1, 2.0), (1, 3, 5.0), (2, 6, 1.0), windows=3)
    end = logits((0, 1, 2.0), (1, 4, 5.0), (2, 7, 1.0), windows=3)
    predictions = answer(start, end, make_batch([4, 4, 9]))
    assert [(p["id"], p["answer"]) for p in predictions] == [("q4", "w3 w4"), ("q9", "w6 w7")]


def test_null_answer_squad_v2():
    start = logits((0, -1, 5.0), (0, 2, 3.0), (1, -1, 1.0), windows=2)
    end = logits((0, -1, 5.0), (0, 2, 3.0), (1, -1, 1.0), windows=2)
    # null = min over windows of CLS start + CLS end = min(10, 2) = 2 < best span 6: a span
    [p] = answer(start, end, make_batch([0, 0], allow_null=True))
    assert p["answer"] == "w2"
    # one window only: null 10 beats the span 6
    [p] = answer(start[:1], end[:1], make_batch([0], allow_null=True))
    assert (p["answer"], p["start"], p["end"], p["score"]) == ("", -1, -1, pytest.approx(10.0))
    # SQuAD v1 data (no unanswerable questions): always a span
    [p] = answer(start[:1], end[:1], make_batch([0], allow_null=False))
    assert p["answer"] == "w2"


def test_best_spans_matches_brute_force():
    torch.manual_seed(0)
    start, end = torch.randn(20, WIDTH), torch.randn(20, WIDTH)
    mask = make_batch([0])["context_mask"].repeat(20, 1)
    scores, starts, ends = best_spans(start, end, mask, n_best=WIDTH, max_answer_length=4)
    for w in range(20):
        spans = [
            (float(start[w, s] + end[w, e]), s, e)
            for s in range(FIRST, FIRST + N_CONTEXT)
            for e in range(s, min(s + 4, FIRST + N_CONTEXT))
        ]
        best = max(spans)
        assert float(scores[w]) == pytest.approx(best[0])
        assert (int(starts[w]), int(ends[w])) == best[1:]


# ---------------------------------------------------------------- the official SQuAD v1.1 definitions


def official_normalize(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_f1(prediction, ground_truth):
    prediction_tokens = official_normalize(prediction).split()
    ground_truth_tokens = official_normalize(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def official_em(prediction, ground_truth):
    return official_normalize(prediction) == official_normalize(ground_truth)


CASES = [
    ("the Eiffel Tower", ["Eiffel Tower."], 1.0, 1.0),
    ("Eiffel tower in Paris", ["the Eiffel Tower"], 0.0, 2 / 3),
    ("cat cat dog", ["cat dog dog"], 0.0, 2 / 3),
    ("Denver Broncos", ["Broncos", "Denver Broncos", "the Broncos"], 1.0, 1.0),
    ("in 1968", ["1969", "1968 film"], 0.0, 0.5),
    ("An  apple,   a day", ["apple day"], 1.0, 1.0),
    ("nothing alike", ["Seurat"], 0.0, 0.0),
    ("Théâtre-Français", ["theatrefrançais"], 0.0, 0.0),  # case folds, accents stay, '-' is dropped
]


@pytest.mark.parametrize("prediction, golds, em, f1", CASES)
def test_exact_match_and_f1_match_the_official_script(prediction, golds, em, f1):
    assert exact_match_score(prediction, golds) == em == max(official_em(prediction, g) for g in golds)
    assert f1_score(prediction, golds) == pytest.approx(f1)
    assert f1_score(prediction, golds) == pytest.approx(max(official_f1(prediction, g) for g in golds))
    assert normalize_answer(prediction) == official_normalize(prediction)


def test_unanswerable_gold_scores_only_an_empty_prediction():
    assert exact_match_score("", []) == f1_score("", []) == 1.0
    assert exact_match_score("w1", []) == f1_score("w1", []) == 0.0
    assert exact_match_score("", ["w1"]) == f1_score("", ["w1"]) == 0.0
