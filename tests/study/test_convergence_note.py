"""The convergence sentence of a study's page and of the demo report never credits step 0, the evaluation
before any training (issue 40: "reached by the pretrained model at step 0")."""

import pytest

from warmstart.report.demo_sections import steps_to_match
from warmstart.report.study_report import convergence


def study(scratch: dict, pretrained: dict) -> dict:
    """A study at one fraction, two seeds per model, with these median validation curves ({step: score})."""
    cells = [
        {"model": model, "fraction": 1.0, "seed": seed, "best_validation": max(curve.values()),
         "validation_curve": [{"step": s, "accuracy": v} for s, v in curve.items()]}
        for model, curve in (("scratch", scratch), ("pretrained", pretrained))
        for seed in (1, 2)
    ]  # fmt: skip
    cells += [{"model": "tfidf", "fraction": 1.0, "seed": s, "best_validation": 0.55} for s in (1, 2)]
    return {"metric": "accuracy", "fractions": [1.0], "models": ["pretrained", "scratch", "tfidf"],
            "cells": cells}  # fmt: skip


@pytest.mark.parametrize(
    "scratch, pretrained, said, match",
    [  # the untrained step 0 scores best for both: before, "reached ... at step 0"
        ({0: 0.60, 10: 0.55, 20: 0.58}, {0: 0.62, 10: 0.57, 20: 0.60},
         "(0.5800, at step 20) is reached by the pretrained model at step 20", (0.58, 20, 20)),
        ({0: 0.50, 10: 0.52}, {0: 0.55, 10: 0.51},
         "(0.5200, at step 10) is never reached by the pretrained model", (0.52, 10, None)),
    ],
)  # fmt: skip
def test_step_zero_is_credited_to_neither_model(tmp_path, scratch, pretrained, said, match):
    s = study(scratch, pretrained)
    path, note = convergence(s, tmp_path / "report.html")
    assert path.stat().st_size > 1000 and said in note and "at step 0 " not in note
    m = steps_to_match(s)
    assert (m["twin_best"], m["twin_step"], m["pretrained_step"]) == pytest.approx(match)


def test_no_sentence_without_a_trained_step(tmp_path):
    s = study({0: 0.6}, {0: 0.7})
    assert convergence(s, tmp_path / "report.html")[1] == "" and steps_to_match(s) is None


def test_a_twin_that_never_improved_on_its_first_evaluation_is_said_so_in_the_demo_claims():
    """MiniLM's random twin at 10% of the labels predicts the majority from its first evaluation on: both
    models "reach" its best at that step, which reads as a tie unless the row says why."""
    from warmstart.report.demo_report import _convergence

    flat = study({0: 0.45, 12: 0.55, 24: 0.55, 36: 0.55}, {0: 0.50, 12: 0.60, 24: 0.70, 36: 0.75})
    learning = study({0: 0.45, 12: 0.55, 24: 0.60, 36: 0.62}, {0: 0.50, 12: 0.60, 24: 0.70, 36: 0.75})
    assert steps_to_match(flat)["twin_never_improved"] and not steps_to_match(learning)["twin_never_improved"]
    rows = {}
    for name, s in (("flat", flat), ("learning", learning)):
        pos = study({0: 0.1, 10: 0.8}, {0: 0.1, 10: 0.9})
        rows[name] = next(r for r in _convergence({"pos": pos, "minilm": s}) if "MiniLM" in r[2])
    assert rows["flat"][4] == "step 12 (its first evaluation: it never improved on it)"
    assert rows["learning"][4] == "step 36" and rows["learning"][3] == "step 24"
