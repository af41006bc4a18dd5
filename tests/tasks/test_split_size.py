"""A validation or test split too small to trust is said before finetuning, with its count and the flags
that give more; splits of 20 examples or more say nothing."""

import csv

from tests.helpers.cli import run
from warmstart.tasks.split_size import FEW, few_examples_line


def test_the_line_names_each_small_split_and_its_flag():
    records = {"train": [{}] * 500, "validation": [{}] * 1, "test": [{}] * 40}
    line = few_examples_line(records)
    assert line.startswith("warning: validation holds 1 example:") and "test" not in line.split(":")[1]
    assert "--validation-file FILE" in line and "--test-file" not in line and "by 100 points" in line
    records["test"] = [{}] * 5
    line = few_examples_line(records)
    assert "validation holds 1 example and test holds 5 examples" in line and "--test-file FILE" in line
    assert few_examples_line({"validation": [{}] * FEW, "test": [{}] * 100}) is None


def test_finetuning_a_20_row_file_says_it(tiny_pretrained, rt_small, tmp_path, capsys):
    with open(rt_small, newline="") as fh:
        rows = list(csv.DictReader(fh))[:10] + list(csv.DictReader(open(rt_small, newline="")))[-10:]
    small = tmp_path / "small.csv"
    with open(small, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    argv = ["finetune", "--init", tiny_pretrained, "--train-file", small, "--out", tmp_path / "run"]
    code, _, err = run(capsys, *argv, "--max-length", "32", "train.steps=2", "train.progress=false")
    assert code == 0, err
    assert "warning: validation holds" in err and "test holds" in err and "--test-file FILE" in err
    argv = ["finetune", "--init", tiny_pretrained, "--train-file", rt_small, "--out", tmp_path / "big"]
    code, _, err = run(capsys, *argv, "--max-length", "32", "train.steps=2", "train.progress=false")
    assert code == 0 and "warning: validation holds" not in err, err
