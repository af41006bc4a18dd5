"""A folder written by `datasets`' ``save_to_disk`` is a dataset wherever one is taken (``--dataset``,
``--test-file``, ``open_dataset``): a DatasetDict with its splits, a Dataset as one train split, class
labels by their names; a damaged folder is one clear line."""

import json

import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError

datasets = pytest.importorskip("datasets")


@pytest.fixture
def saved(rt_small, tmp_path):
    """rt_small's 240 real snippets as `datasets` folders: a DatasetDict (train 200, test 40) whose text
    column is "sentence" and whose label is a ClassLabel (0 rotten, 1 fresh), and its test split alone."""
    import pandas as pd

    frame = pd.read_csv(rt_small).rename(columns={"text": "sentence"})
    features = datasets.Features(
        {"sentence": datasets.Value("string"), "label": datasets.ClassLabel(names=["rotten", "fresh"])}
    )
    frame["label"] = (frame["label"] == "fresh").astype(int)
    part = {k: datasets.Dataset.from_pandas(v, features=features, preserve_index=False)
            for k, v in (("train", frame[:200]), ("test", frame[200:]))}  # fmt: skip
    datasets.DatasetDict(part).save_to_disk(tmp_path / "dd")
    part["test"].save_to_disk(tmp_path / "test_only")
    return {"dict": tmp_path / "dd", "one": tmp_path / "test_only", "csv": rt_small, "frame": frame}


def test_a_saved_dataset_dict_keeps_its_splits_and_class_names(saved):
    options = DataOptions(text_column="sentence")
    data = open_dataset(str(saved["dict"]), options)
    assert data.kind == "labeled" and data.name == str(saved["dict"])
    test = list(data.records("test"))
    assert [r["text"] for r in test] == list(saved["frame"]["sentence"][200:])
    assert {r["label"] for r in test} == {"rotten", "fresh"}
    counts = data.counts()
    assert counts["test"] == 40 and counts["train"] + counts["validation"] == 200 and counts["validation"] > 0
    one = open_dataset(str(saved["one"]), options)  # a Dataset: one split, the others carved from it
    assert one.counts()["all"] == 40 and one.split_note.startswith("official splits: train;")
    with pytest.raises(WarmstartError, match=r"has no column 'text' \(columns: sentence, label\)"):
        open_dataset(str(saved["dict"]))


def test_a_damaged_folder_is_one_clear_line(saved):
    (saved["one"] / "state.json").write_text("{not json")
    with pytest.raises(WarmstartError, match="a folder of `datasets`' save_to_disk") as caught:
        open_dataset(str(saved["one"]), DataOptions(text_column="sentence"))
    assert "\n" not in str(caught.value)


def test_finetune_and_evaluate_on_saved_folders(tiny_pretrained, saved, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["finetune", "--init", tiny_pretrained, "--dataset", saved["dict"], "--text-column", "sentence"]
    code, _, err = run(
        capsys, *argv, "--out", out, "--epochs", "1", "train.progress=false", "task.max_length=32"
    )
    assert code == 0, err
    tm = json.loads((out / "test_metrics.json").read_text())
    assert tm["sizes"]["test"] == 40 and tm["breakdown"]["labels"] == ["fresh", "rotten"]
    code, stdout, err = run(
        capsys, "evaluate", out, "--test-file", saved["one"], "--out", tmp_path / "m.json"
    )
    assert code == 0, err
    assert json.loads((tmp_path / "m.json").read_text())["metrics"]["accuracy"] == pytest.approx(
        tm["test"]["accuracy"]
    )
    code, _, err = run(capsys, "evaluate", out, "--test-file", tmp_path / "nowhere")
    assert_one_line_error(code, err, "nowhere")
