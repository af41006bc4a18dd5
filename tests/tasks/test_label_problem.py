"""Numeric labels that are scores make a regression run, as transformers' run_classification.py decides from
a float label column; whole numbers stay classes; task.problem given wins (tasks/scores.py)."""

import csv
import json

import pytest
import yaml

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data.labels import MultiLabel
from warmstart.data.readers import read_file
from warmstart.tasks.label_problem import score_example


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


def finetune(capsys, tiny_pretrained, data, out, *extra, label="score"):
    argv = [
        "finetune",
        "--init",
        tiny_pretrained,
        "--train-file",
        data,
        "--label-column",
        label,
        "--out",
        out,
    ]
    return run(capsys, *argv, "--max-length", "32", "train.steps=4", "train.progress=false", *extra)


def problem_and_metrics(run_dir) -> tuple[str, set]:
    """The task.problem a finished run saved, and the names of its test metrics."""
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    return saved["task"]["problem"], set(json.loads((run_dir / "test_metrics.json").read_text())["test"])


def test_a_score_column_trains_a_regression_and_says_so(tiny_pretrained, scores_csv, tmp_path, capsys):
    code, _, err = finetune(capsys, tiny_pretrained, scores_csv, tmp_path / "reg")
    assert code == 0, err
    assert "the labels are numbers, not all whole" in err and "task.problem=regression" in err
    problem, metrics = problem_and_metrics(tmp_path / "reg")
    assert problem == "regression" and {"mse", "pearson"} <= metrics


def test_task_problem_given_keeps_the_scores_as_classes(tiny_pretrained, scores_csv, tmp_path, capsys):
    code, _, err = finetune(
        capsys, tiny_pretrained, scores_csv, tmp_path / "cls", "task.problem=single_label"
    )
    assert "the labels are numbers" not in err
    # as classes, the validation split holds scores training never saw: refused, pointing at regression
    assert code == 2 and "scores (numbers) need task.problem=regression" in err
    assert len(err.strip().splitlines()[-1]) < 400  # the known labels are cut short, not all listed


@pytest.fixture(scope="module")
def lists_jsonl(rt_small, tmp_path_factory):
    """rt_small as JSON lines whose label is a list: the review's class, plus "long" past 100 characters,
    and an empty list for every 10th row (no label applies)."""
    with open(rt_small, newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = tmp_path_factory.mktemp("lists") / "lists.jsonl"
    with open(out, "w") as fh:
        for i, r in enumerate(rows):
            labels = [] if i % 10 == 0 else [r["label"]] + (["long"] if len(r["text"]) > 100 else [])
            fh.write(json.dumps({"text": r["text"], "labels": labels}) + "\n")
    return out


def test_lists_of_labels_read_as_one_row_each(lists_jsonl):
    rows = list(read_file(lists_jsonl, label_column="labels"))
    assert all(isinstance(r["label"], MultiLabel) for r in rows)
    assert rows[0]["label"].parts == () and rows[0]["label"] == ""
    two = next(r["label"] for r in rows if len(r["label"].parts) == 2)
    assert two.parts[1] == "long" and two == f"{two.parts[0]}|long"


def multi_label_run(capsys, tiny_pretrained, data, out, label: str) -> str:
    """Finetune on ``data`` with no task.problem: a multi-label run with its metrics; its stderr."""
    code, _, err = finetune(capsys, tiny_pretrained, data, out, label=label)
    assert code == 0, err
    problem, metrics = problem_and_metrics(out)
    assert problem == "multi_label" and {"f1", "exact_match"} <= metrics
    return err


def test_a_list_label_column_trains_a_multi_label_run(tiny_pretrained, lists_jsonl, tmp_path, capsys):
    err = multi_label_run(capsys, tiny_pretrained, lists_jsonl, tmp_path / "ml", "labels")
    assert "the labels are lists" in err and "task.problem=multi_label" in err
    # as single labels, the rows with two are refused in one line
    given = "task.problem=single_label"
    code, _, err = finetune(capsys, tiny_pretrained, lists_jsonl, tmp_path / "one", given, label="labels")
    assert_one_line_error(code, err, "a list of", "task.problem=multi_label")


def test_labels_joined_by_the_separator_in_a_csv_train_a_multi_label_run(
    tiny_pretrained, lists_jsonl, tmp_path, capsys
):
    """A CSV's "fresh|long" is two labels, as a multitask member reads it; single_label keeps it a class."""
    joined = tmp_path / "joined.csv"
    with open(joined, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text", "tags"])
        for r in read_file(lists_jsonl, label_column="labels"):
            if r["label"].parts:  # an empty cell is refused unless task.problem=multi_label is given
                writer.writerow([r["text"], str(r["label"])])
    err = multi_label_run(capsys, tiny_pretrained, joined, tmp_path / "ml", "tags")
    assert "the labels are joined by '|' (e.g. " in err and "task.problem=single_label treats them" in err
    given = "task.problem=single_label"
    code, _, err = finetune(capsys, tiny_pretrained, joined, tmp_path / "one", given, label="tags")
    assert code == 0 and "joined by" not in err, err
    assert problem_and_metrics(tmp_path / "one")[0] == "single_label"


def test_an_hf_sequence_of_class_labels_is_a_multi_label_row(tmp_path):
    """A local `datasets` folder whose labels are Sequence(ClassLabel): the names, not '[0, 2]'."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "labels": datasets.Sequence(datasets.ClassLabel(names=["a", "b", "c"])),
        }
    )
    rows = {"text": [f"text {i}" for i in range(40)], "labels": [[0, 2] if i % 2 else [1] for i in range(40)]}
    folder = tmp_path / "mlset"
    folder.mkdir()
    datasets.Dataset.from_dict(rows, features=features).to_parquet(str(folder / "train.parquet"))
    from warmstart.data.catalog import open_dataset
    from warmstart.data.dataset import DataOptions

    labels = {
        r["label"].parts
        for r in open_dataset(f"hf:{folder}", DataOptions(label_column="labels")).records("all")
    }
    assert labels == {("a", "c"), ("b",)}


def test_an_id_column_given_as_the_label_is_named_as_such(tiny_pretrained, rt_small, tmp_path, capsys):
    """A row id as the label (every value new in validation): the refusal asks whether it is an id."""
    with open(rt_small, newline="") as fh:
        rows = list(csv.DictReader(fh))
    ids = tmp_path / "ids.csv"
    with open(ids, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text", "id"])
        writer.writerows([r["text"], i] for i, r in enumerate(rows))
    code, _, err = finetune(capsys, tiny_pretrained, ids, tmp_path / "ids", label="id")
    assert_one_line_error(code, err, "has labels the model was not trained on", "if this column is an id")
    assert not (tmp_path / "ids").exists()
