"""Own split files on the command line (issue 37): `finetune --train-file --validation-file --test-file`,
`evaluate RUN --test-file`, and the one-line refusals."""

import csv
import json

import pytest
import yaml

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.runs import STUDY_FAST

FAST = ["train.progress=false", "task.max_length=32", "train.batch_size=16", "evals_per_epoch=2"]


@pytest.fixture
def files(rt_small, tmp_path):
    """a.csv (160 rows), b.csv (40), c.csv (40): the 240 real snippets of rt_small, in its order (both
    classes in each)."""
    rows = list(csv.DictReader(open(rt_small, encoding="utf-8")))
    out = {}
    for name, part in (("a", rows[:160]), ("b", rows[160:200]), ("c", rows[200:])):
        out[name] = tmp_path / "data" / f"{name}.csv"
        out[name].parent.mkdir(exist_ok=True)
        with open(out[name], "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=["text", "label"])
            writer.writeheader()
            writer.writerows(part)
    return out


def test_finetune_and_evaluate_on_own_split_files(tiny_pretrained, files, tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "finetune",
        "--init",
        tiny_pretrained,
        "--train-file",
        files["a"],
        "--validation-file",
        files["b"],
    ]
    code, _, err = run(capsys, *argv, "--test-file", files["c"], "--out", out, "--epochs", "1", *FAST)
    assert code == 0, err
    assert f"train: {files['a']}; validation: {files['b']}; test: {files['c']}" in err
    metrics = json.loads((out / "test_metrics.json").read_text())
    assert metrics["sizes"] == {"train": 160, "validation": 40, "test": 40}
    saved = yaml.safe_load((out / "config.yaml").read_text())["data"]
    assert saved["train_file"] == str(files["a"]) and saved["test_file"] == str(files["c"])
    # evaluate on the test file alone (no --data): the numbers the run reported
    code, stdout, err = run(capsys, "evaluate", out, "--test-file", files["c"], "--out", tmp_path / "m.json")
    assert code == 0, err
    assert stdout.startswith(f"{files['c']} (test, 40 examples): ")
    written = json.loads((tmp_path / "m.json").read_text())
    again = written["metrics"]
    assert again["accuracy"] == pytest.approx(metrics["test"]["accuracy"], abs=1e-6)
    # per class, as the run's own breakdown: the confusion's diagonal is the accuracy, a table is printed
    parts = written["breakdown"]
    assert parts["confusion"] == metrics["breakdown"]["confusion"] and parts["count"] == 40
    diagonal = sum(parts["confusion"][i][i] for i in range(len(parts["labels"])))
    assert diagonal / 40 == pytest.approx(again["accuracy"], abs=1e-6)
    assert "class      precision  recall      f1  support" in stdout
    for name, c in parts["per_class"].items():
        assert f"{c['recall']:6.4f}" in stdout and f"{c['support']:7,}" in stdout and name in stdout
    assert "confusion (rows gold, columns predicted):" in stdout
    assert "evaluating" in err and "batch/s" in err  # a progress bar with its rate, on stderr
    code, _, err = run(capsys, "evaluate", out)
    assert_one_line_error(code, err, "no data given", "--test-file")


def test_a_carved_split_and_the_refusals(tiny_pretrained, files, tmp_path, capsys):
    base = ["finetune", "--init", tiny_pretrained, *FAST, "train.steps=2"]
    code, _, err = run(
        capsys, *base, "--train-file", files["a"], "--test-file", files["c"], "--out", tmp_path / "r"
    )
    assert code == 0, err
    assert f"validation: carved from {files['a']} by hash (10%, seed 0); test: {files['c']}" in err
    sizes = json.loads((tmp_path / "r" / "test_metrics.json").read_text())["sizes"]
    assert (
        sizes["train"] + sizes["validation"] == 160 and 5 < sizes["validation"] < 35 and sizes["test"] == 40
    )
    # evaluate carves the same validation split from the same train file
    argv = ["evaluate", tmp_path / "r", "--train-file", files["a"], "--split", "validation"]
    code, stdout, err = run(capsys, *argv)
    assert code == 0, err
    assert f"(validation, {sizes['validation']} examples)" in stdout
    code, _, err = run(capsys, *base, "--test-file", files["c"], "--out", tmp_path / "s")
    assert_one_line_error(code, err, "but no training data", "--train-file")
    code, _, err = run(capsys, *base, "--train-file", files["a"], "--out", files["a"].parent)
    assert_one_line_error(code, err, "contains the --train-file")
    assert not (tmp_path / "s").exists()


def test_a_study_on_own_split_files(tiny_pretrained, files, tmp_path, capsys):
    out = tmp_path / "study"
    argv = ["study", tiny_pretrained, "--train-file", files["a"], "--test-file", files["c"], "--out", out]
    code, _, err = run(
        capsys, *argv, "--fractions", "1", "--seeds", "1", "--epochs", "1", "--min-steps", "0", *STUDY_FAST
    )
    assert code == 0, err
    assert f"validation: carved from {files['a']} by hash (10%, seed 0); test: {files['c']}" in err
    study = json.loads((out / "study.json").read_text())
    sizes = study["dataset"]["sizes"]
    assert sizes["test"] == 40 and sizes["train"] + sizes["validation"] == 160
    for cell in ("pretrained", "scratch"):  # each finetuned cell read the same own splits
        log = (out / "cells" / cell / "frac-1" / "seed-1" / "log.txt").read_text()
        assert log.startswith(f"train: {files['a']}; validation: carved from {files['a']}")
        tm = json.loads(
            (out / "cells" / cell / "frac-1" / "seed-1" / "run" / "test_metrics.json").read_text()
        )
        assert tm["sizes"] == sizes


def test_a_study_reads_a_files_own_column_names(tiny_pretrained, files, tmp_path, capsys):
    """--text-column / --label-column as finetune's: every cell and the TF-IDF baseline read them."""
    renamed = tmp_path / "renamed.csv"
    lines = files["a"].read_text(encoding="utf-8").splitlines(keepends=True)
    renamed.write_text("review,sentiment\n" + "".join(lines[1:]), encoding="utf-8")
    out = tmp_path / "study"
    argv = ["study", tiny_pretrained, "--train-file", renamed, "--out", out, "--text-column", "review"]
    code, _, err = run(capsys, *argv, "--label-column", "sentiment", "--fractions", "1", "--seeds", "1",
                       "--epochs", "1", "--min-steps", "0", *STUDY_FAST)  # fmt: skip
    assert code == 0, err
    table = json.loads((out / "study.json").read_text())["table"]
    assert {row["model"] for row in table} >= {"pretrained", "scratch", "tfidf"}
    assert all(
        "failed" not in row or row["failed"] < len(row["seeds"]) for row in table if row["model"] == "tfidf"
    )
    saved = yaml.safe_load(
        (out / "cells" / "pretrained" / "frac-1" / "seed-1" / "run" / "config.yaml").read_text()
    )
    assert (saved["data"]["text_column"], saved["data"]["label_column"]) == ("review", "sentiment")
