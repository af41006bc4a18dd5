"""A missing column's error says which columns look like the text and the label (the longest values; few
distinct values), from the file's first rows, on real rotten-tomatoes snippets under other names."""

import csv

import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data.column_guess import guess
from warmstart.data.readers import read_file
from warmstart.errors import WarmstartError


@pytest.fixture
def renamed(rt_small, tmp_path):
    rows = list(csv.DictReader(open(rt_small, encoding="utf-8")))
    path = tmp_path / "reviews.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "sentiment", "review"])
        writer.writerows([i, r["label"], r["text"]] for i, r in enumerate(rows))
    return path


def test_the_guess_on_real_rows(renamed):
    rows = list(csv.DictReader(open(renamed, encoding="utf-8")))
    assert guess(rows) == ("review", "sentiment")  # the id has 240 distinct values: not a label
    assert guess([{"a": "x", "b": "y"}] * 5) == (None, None)  # short and single-valued: no guess


def test_the_missing_columns_fix_names_the_guess(renamed, tiny_pretrained, tmp_path, capsys):
    with pytest.raises(WarmstartError, match=r"one of: id, sentiment, review \(the longest texts are in "
                                             r"'review'; 'sentiment' looks like the label\)"):  # fmt: skip
        list(read_file(renamed, label_column="label"))
    argv = ["finetune", "--init", tiny_pretrained, "--train-file", renamed, "--out", tmp_path / "r"]
    code, _, err = run(capsys, *argv, "--text-column", "review")
    assert_one_line_error(code, err, "labeled files need their label column", "'sentiment' has few distinct")


def test_data_show_lists_a_tables_columns_when_it_has_no_text_column(renamed, capsys):
    code, out, err = run(capsys, "data", "show", renamed, "--examples", "2")
    assert code == 0, err
    lines = out.splitlines()
    assert (
        lines[0] == f"{renamed}: columns id, sentiment, review; no 'text' column, so which one is the text?"
    )
    assert (
        lines[1]
        == f"it looks like: warmstart data show {renamed} --text-column review --label-column sentiment"
    )
    assert len(lines) == 4 and lines[2].startswith("  1. id: 0 | sentiment: ")
    code, out, err = run(
        capsys, "data", "show", renamed, "--text-column", "review", "--label-column", "sentiment"
    )
    assert code == 0 and "(labeled)" in out.splitlines()[0] and "counts:   train" in out, err
