"""Numeric labels that are scores make a regression run, as transformers' run_classification.py decides from
a float label column; whole numbers stay classes; task.problem given wins (tasks/scores.py)."""

import csv
import json

import pytest
import yaml

from tests.helpers.cli import run
from warmstart.tasks.scores import score_example


@pytest.mark.parametrize(
    "labels, example",
    [
        (["1.344", "2", "0.5"], "1.344"),
        ([1.0, 2.0], 1.0),  # floats from JSON: scores, as a float column is to `datasets`
        (["1e-3", "4"], "1e-3"),
        (["0", "1", "2"], None),  # whole numbers: classes
        ([0, 1], None),
        (["1.5", "good"], None),  # not all numbers
        (["1.5", "nan"], None),
        ([True, 0.5], None),
        ([["a"], 0.5], None),
    ],
)
def test_what_counts_as_scores(labels, example):
    assert score_example([{"label": x} for x in labels]) == example


@pytest.fixture(scope="module")
def scores_csv(rt_small, tmp_path_factory):
    """rt_small's texts with a made-up score (their length in words, /10): a regression file."""
    with open(rt_small, newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = tmp_path_factory.mktemp("scores") / "scores.csv"
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "score"])
        w.writerows([r["text"], round(len(r["text"].split()) / 10, 2)] for r in rows)
    return out


def finetune(capsys, tiny_pretrained, data, out, *extra):
    argv = [
        "finetune",
        "--init",
        tiny_pretrained,
        "--train-file",
        data,
        "--label-column",
        "score",
        "--out",
        out,
    ]
    return run(capsys, *argv, "--max-length", "32", "train.steps=4", "train.progress=false", *extra)


def test_a_score_column_trains_a_regression_and_says_so(tiny_pretrained, scores_csv, tmp_path, capsys):
    code, _, err = finetune(capsys, tiny_pretrained, scores_csv, tmp_path / "reg")
    assert code == 0, err
    assert "the labels are numbers, not all whole" in err and "task.problem=regression" in err
    saved = yaml.safe_load((tmp_path / "reg" / "config.yaml").read_text())
    assert saved["task"]["problem"] == "regression"
    test = json.loads((tmp_path / "reg" / "test_metrics.json").read_text())["test"]
    assert {"mse", "pearson"} <= set(test)


def test_task_problem_given_keeps_the_scores_as_classes(tiny_pretrained, scores_csv, tmp_path, capsys):
    code, _, err = finetune(
        capsys, tiny_pretrained, scores_csv, tmp_path / "cls", "task.problem=single_label"
    )
    assert "the labels are numbers" not in err
    # as classes, the validation split holds scores training never saw: refused, pointing at regression
    assert code == 2 and "scores (numbers) need task.problem=regression" in err
    assert len(err.strip().splitlines()[-1]) < 400  # the known labels are cut short, not all listed
