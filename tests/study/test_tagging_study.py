"""`warmstart study` on tagged words (the real Brown corpus): token accuracy, the most-frequent-tag baseline
on the same subsets, and fewer seeds at fraction 1 (--full-seeds)."""

import json

import pytest

from warmstart.cli.main import main
from warmstart.data.catalog import open_dataset
from warmstart.study import frequent_tag

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tag_study(tiny_pretrained, tmp_path_factory):
    out = tmp_path_factory.mktemp("study") / "pos"
    argv = [
        "study", str(tiny_pretrained), "--data", "brown-pos-universal", "--out", str(out),
        "--fractions", "0.5,1", "--seeds", "1,2", "--full-seeds", "3", "--epochs", "1", "--min-steps", "0",
        "data.train_limit=160", "data.validation_limit=300", "data.test_limit=400",
        "task.max_length=64", "train.batch_size=16", "train.lr=2e-3",
        "task.unseen_tags=fallback",
    ]  # fmt: skip
    assert main(argv) == 0
    return out


def test_cells_seeds_and_metric(tag_study):
    study = json.loads((tag_study / "study.json").read_text())
    assert study["metric"] == "accuracy" and study["models"] == ["pretrained", "scratch", "frequent_tag"]
    cells = {(c["model"], c["fraction"], c["seed"]) for c in study["cells"]}
    models = study["models"]
    assert cells == {(m, 0.5, s) for m in models for s in (1, 2)} | {(m, 1.0, 3) for m in models}
    for c in study["cells"]:
        assert c["metric"] == "accuracy" and 0 < c["test"]["accuracy"] <= 1 and "f1" not in c["test"]
    assert (tag_study / "report.html").is_file()
    assert "most frequent tag per word" in (tag_study / "report.md").read_text()


def test_baseline_equals_a_count_by_hand(tag_study):
    """The baseline cell at fraction 1 scores the test split exactly as counting the tags by hand does."""
    data = open_dataset("brown-pos-universal")
    train = list(data.records("train"))[:160]
    test = list(data.records("test"))[:400]  # data.test_limit
    best = {}
    for r in train:
        for w, t in zip(r["tokens"], r["tags"]):
            best.setdefault(w, {}).setdefault(t, 0)
            best[w][t] += 1
    overall = frequent_tag.fit(train)[2]
    lower = frequent_tag.fit(train)[1]
    right = total = 0
    for r in test:
        for w, t in zip(r["tokens"], r["tags"]):
            guess = (
                max(best[w].items(), key=lambda kv: kv[1])[0] if w in best else lower.get(w.lower(), overall)
            )
            right += guess == t
            total += 1
    cell = json.loads((tag_study / "cells" / "frequent_tag" / "frac-1" / "seed-3" / "cell.json").read_text())
    assert cell["test"]["accuracy"] == pytest.approx(right / total)
    assert cell["train_examples"] == 160
