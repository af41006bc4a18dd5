"""The user's own splits (issue 37): split files taken as given, only the missing splits carved from train by
hash, a folder read by split, files replacing splits of a dataset, the line that says where each came from,
and the errors."""

import csv
import json

import pytest

from warmstart.data.catalog import open_data, open_dataset, show
from warmstart.data.dataset import DataOptions
from warmstart.data.options import FinetuneDataConfig
from warmstart.errors import WarmstartError
from warmstart.registry import TASKS, lookup
from warmstart.tasks.base import TaskConfig, read_dataset_splits

SPLITS = ("train", "validation", "test")


@pytest.fixture(scope="module")
def reviews():
    """500 real rotten-tomatoes snippets, distinct texts."""
    rows, seen = [], set()
    for r in open_dataset("rotten-tomatoes").records("all"):
        if r["text"] not in seen:
            seen.add(r["text"])
            rows.append({"text": r["text"], "label": r["label"]})
        if len(rows) == 500:
            return rows


def write(path, rows, columns=("text", "label")):
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps({c: r[c] for c in columns}) + "\n" for r in rows))
        return path
    delimiter = "\t" if path.suffix == ".tsv" else ","
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), delimiter=delimiter, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def texts(dataset, split):
    return [r["text"] for r in dataset.records(split)]


def test_given_splits_are_taken_as_they_are(reviews, tmp_path):
    parts = dict(zip(SPLITS, (reviews[:400], reviews[400:450], reviews[450:])))
    files = {s: str(write(tmp_path / f"{s}.csv", rows)) for s, rows in parts.items()}
    data = open_data("", files)
    for split, rows in parts.items():
        assert texts(data, split) == [r["text"] for r in rows]
    assert data.counts() == {"train": 400, "validation": 50, "test": 50, "all": 500}
    assert data.origin == f"train: {files['train']}; validation: {files['validation']}; test: {files['test']}"


def test_only_the_missing_split_is_carved_from_train(reviews, tmp_path):
    train = str(write(tmp_path / "train.csv", reviews[:450]))
    test = str(write(tmp_path / "test.csv", reviews[450:]))
    data = open_data("", {"train": train, "test": test}, DataOptions(split_seed=3))
    parts = {s: texts(data, s) for s in SPLITS}
    assert parts["test"] == [r["text"] for r in reviews[450:]]  # the file, whole
    # validation and train partition the train file: disjoint, nothing lost, nothing carved as test
    assert sorted(parts["train"] + parts["validation"]) == sorted(r["text"] for r in reviews[:450])
    assert not set(parts["train"]) & set(parts["validation"])
    assert 20 < len(parts["validation"]) < 75  # about 10%, not 20%
    assert data.origin == (
        f"train: {train}; validation: carved from {train} by hash (10%, seed 3); test: {test}"
    )
    # seeded: the same seed gives the same validation, another seed another
    assert (
        texts(open_data("", {"train": train, "test": test}, DataOptions(split_seed=3)), "validation")
        == (parts["validation"])
    )
    assert texts(open_data("", {"train": train, "test": test}), "validation") != parts["validation"]


def test_finetune_data_says_where_each_split_came_from(reviews, tmp_path, capsys):
    train = str(write(tmp_path / "train.csv", reviews[:450]))
    validation = str(write(tmp_path / "dev.jsonl", reviews[450:]))
    task = lookup(TASKS, "task", "classification")(TaskConfig())
    d = FinetuneDataConfig(train_file=train, validation_file=validation)
    records, name = read_dataset_splits(d, task)
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [
        f"train: {train}; validation: {validation}; test: carved from {train} by hash (10%, seed 0)"
    ]
    assert len(records["validation"]) == 50 and len(records["train"]) + len(records["test"]) == 450
    assert name == train


def test_a_folder_is_read_by_split(reviews, tmp_path):
    folder = tmp_path / "reviews"
    folder.mkdir()
    write(folder / "train.csv", reviews[:400])
    write(folder / "dev.jsonl", reviews[400:450])
    write(folder / "test.tsv", reviews[450:])
    (folder / "README.md").write_text("not data")
    data = open_dataset(str(folder))
    assert data.counts() == {"train": 400, "validation": 50, "test": 50, "all": 500}
    assert texts(data, "validation") == [r["text"] for r in reviews[400:450]]
    assert data.kind == "labeled" and data.labels() == ["fresh", "rotten"]
    assert (
        data.origin == f"train: {folder}/train.csv; validation: {folder}/dev.jsonl; test: {folder}/test.tsv"
    )
    assert "splits:   train: " in show(str(folder))  # data show DIR says the origin
    # a folder without test: carved from its train file
    (folder / "test.tsv").unlink()
    data = open_dataset(str(folder))
    assert data.counts()["validation"] == 50 and data.counts()["train"] + data.counts()["test"] == 400
    assert "test: carved from" in data.origin


def test_files_replace_splits_of_a_dataset(reviews, tmp_path):
    mine = str(write(tmp_path / "mine.csv", reviews[:40]))
    named = open_dataset("rotten-tomatoes")
    data = open_data("rotten-tomatoes", {"test": mine})
    assert texts(data, "test") == [r["text"] for r in reviews[:40]]
    # the dataset, without official splits, is the training data: validation carved as before (the hashed
    # regions nest), its old test region now trains
    assert texts(data, "validation") == texts(named, "validation")
    assert sorted(texts(data, "train")) == sorted(texts(named, "train") + texts(named, "test"))
    assert data.origin.startswith("train: rotten-tomatoes; validation: carved from rotten-tomatoes by hash")
    # a folder has splits of its own: the file replaces one, the others stay
    folder = tmp_path / "folder"
    folder.mkdir()
    write(folder / "train.csv", reviews[100:400])
    write(folder / "validation.csv", reviews[400:450])
    write(folder / "test.csv", reviews[450:])
    data = open_data(str(folder), {"test": mine})
    assert texts(data, "test") == [r["text"] for r in reviews[:40]]
    assert texts(data, "validation") == [r["text"] for r in reviews[400:450]]
    assert data.counts()["train"] == 300


def test_errors_name_the_files(reviews, tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    write(folder / "train.csv", reviews[:10])
    write(folder / "train.jsonl", reviews[:10])
    with pytest.raises(WarmstartError, match="holds 2 train files: train.csv, train.jsonl"):
        open_dataset(str(folder))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(WarmstartError, match="folder without split files"):
        open_dataset(str(empty))
    test = str(write(tmp_path / "test.csv", reviews[:10]))
    with pytest.raises(WarmstartError, match="test data given .* but no training data") as err:
        open_data("", {"test": test})
    assert test in str(err.value) and "--train-file" in err.value.fix
    unlabeled = str(write(tmp_path / "unlabeled.csv", reviews[:10], columns=("text",)))
    train = str(write(tmp_path / "train.csv", reviews[:100]))
    with pytest.raises(
        WarmstartError, match=f"the test data {unlabeled} is a corpus dataset but the training"
    ):
        open_data("", {"train": train, "test": unlabeled})
    with pytest.raises(WarmstartError, match="no dataset given"):
        read_dataset_splits(FinetuneDataConfig(), lookup(TASKS, "task", "classification")(TaskConfig()))
