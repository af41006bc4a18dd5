"""A quoted file pattern is one dataset (``--train-file 'parts/*.csv'``, ``--corpus 'docs/*.txt'``): its
files' records in name order, split by hash exactly as one file holding them all; no match, or files of
different kinds, is one line; a second file after a file flag says how to give several."""

import csv

import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["review", "stars"])
        writer.writerows(rows)


@pytest.fixture
def parts(rt_small, tmp_path):
    rows = [(r["text"], r["label"]) for r in csv.DictReader(open(rt_small, encoding="utf-8"))]
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(3):  # written out of name order: read in name order
        _write(folder / f"part-{2 - i}.csv", rows[(2 - i) * 80 : (3 - i) * 80])
    _write(tmp_path / "whole.csv", rows)
    return folder, tmp_path / "whole.csv"


def test_a_pattern_reads_its_files_as_one(parts):
    folder, whole = parts
    options = DataOptions(text_column="review", label_column="stars")
    joined = open_dataset(str(folder / "*.csv"), options)
    one = open_dataset(str(whole), options)
    assert joined.kind == one.kind == "labeled" and "3 files matching" in joined.description
    for split in ("train", "validation", "test", "all"):
        assert list(joined.records(split)) == list(one.records(split)), split
    single = open_dataset(str(folder / "part-0.*"), options)  # one match: that file, as itself
    assert single.name == "part-0.csv" and len(list(single.records("all"))) == 80


def test_no_match_and_mixed_kinds_are_one_line(parts, tmp_path):
    folder, _ = parts
    with pytest.raises(WarmstartError, match=r"no file matches .*nothing-\*\.csv; check the pattern"):
        open_dataset(str(tmp_path / "nothing-*.csv"), DataOptions(text_column="review", label_column="stars"))
    (folder / "notes.txt").write_text("a line of text\n", encoding="utf-8")
    with pytest.raises(
        WarmstartError, match=r"not of one kind: notes.txt \(corpus\), part-0.csv \(labeled\)"
    ):
        open_dataset(str(folder / "*"), DataOptions(text_column="review", label_column="stars"))


def test_finetune_on_a_pattern_and_a_second_file_refused(tiny_pretrained, parts, tmp_path, capsys):
    folder, whole = parts
    argv = ["finetune", "--init", tiny_pretrained, "--text-column", "review", "--label-column", "stars"]
    fast = ["train.steps=2", "train.progress=false", "--max-length", "32"]
    code, _, err = run(capsys, *argv, "--train-file", str(folder / "*.csv"), "--out", tmp_path / "r", *fast)
    assert code == 0, err
    assert f"train: {folder}/*.csv; validation: carved from {folder}/*.csv" in err
    code, _, err = run(capsys, *argv, "--train-file", folder / "part-0.csv", folder / "part-1.csv",
                       "--out", tmp_path / "s", *fast)  # fmt: skip
    assert_one_line_error(code, err, "part-1.csv is a file, not a key.sub=value setting", "'data/*.csv'")


def test_a_pattern_resumed_elsewhere_is_read_where_the_run_started(parts, tmp_path, monkeypatch):
    from warmstart.checkpoints.workdir import _found_in

    folder, _ = parts
    monkeypatch.chdir(tmp_path / "parts")  # from here 'parts/*.csv' matches nothing
    assert _found_in("parts/*.csv", str(tmp_path)) == str(tmp_path / "parts/*.csv")
    assert _found_in("*.csv", str(tmp_path)) == "*.csv"  # it matches from here: as given
