"""Own splits from Python (issue 37): ``data={"train": df, "validation": df2, "test": df3}`` from pandas and a
``datasets.DatasetDict``; the run's sizes are the user's, config.yaml records specs (no cache path) that
resume on the same data, and errors name the argument, never the cache file."""

import json

import datasets
import pandas as pd
import pytest
import yaml

import warmstart
from tests.helpers.cli import assert_one_line_error, run
from warmstart.api.data import data_section
from warmstart.errors import WarmstartError

pytestmark = pytest.mark.integration

FAST = ["train.batch_size=16", "task.max_length=32", "train.progress=false", "train.eval_at_start=false"]
SPLITS = ("train", "validation", "test")


@pytest.fixture
def frames(rt_small):
    """240 real rotten-tomatoes snippets, shuffled, as train 160, validation 40, test 40 DataFrames."""
    df = pd.read_csv(rt_small).sample(frac=1, random_state=0).reset_index(drop=True)
    return df[:160], df[160:200], df[200:]


def test_data_section_tells_splits_from_columns_and_settings(frames):
    train, validation, test = frames
    section = data_section({"train": train, "dev": validation, "test": "mine.csv", "label_column": "y"})
    assert set(section) == {"train_file", "validation_file", "test_file", "label_column"}
    assert section["train_file"].startswith("inline:") and section["test_file"] == "mine.csv"
    columns = data_section({"text": list(train["text"]), "label": list(train["label"])})
    assert columns == {"dataset": data_section(train)["dataset"]}  # same content, same spec
    assert data_section(dict(dataset="rotten-tomatoes", label_column="y")) == {
        "dataset": "rotten-tomatoes",
        "label_column": "y",
    }
    assert data_section(dict(train_file="a.csv")) == {"train_file": "a.csv"}
    with pytest.raises(WarmstartError, match=r"gives the validation split twice \(validation and dev\)"):
        data_section({"validation": validation, "dev": validation})
    unsupervised = datasets.DatasetDict({"train": datasets.Dataset.from_pandas(train), "unsupervised": None})
    with pytest.raises(
        WarmstartError, match="DatasetDict with keys that are neither splits .*: unsupervised"
    ):
        data_section(unsupervised)


def test_finetune_on_own_dataframes(tiny_pretrained, frames, tmp_path, capsys, test_cache):
    train, validation, test = frames
    data = {"train": train, "validation": validation, "test": test}
    warmstart.finetune(*FAST, init=str(tiny_pretrained), data=data, out=str(tmp_path / "ft"), epochs=1)
    metrics = json.loads((tmp_path / "ft" / "test_metrics.json").read_text())
    assert metrics["sizes"] == {"train": 160, "validation": 40, "test": 40}
    said = "train: data['train'] (DataFrame, 160 rows); validation: data['validation'] (DataFrame, 40 rows)"
    assert said in capsys.readouterr().err
    text = (tmp_path / "ft" / "config.yaml").read_text()
    assert str(test_cache) not in text and "inline/" not in text and ".jsonl" not in text
    saved = yaml.safe_load(text)["data"]
    assert not saved["dataset"] and all(saved[f"{s}_file"].startswith("inline:") for s in SPLITS)
    # the same data resumes the run (same content, same spec; the fingerprint holds) ...
    again = warmstart.finetune(
        *FAST, init=str(tiny_pretrained), data=data, epochs=1, resume=str(tmp_path / "ft")
    )
    assert again.metrics == metrics["test"]
    # ... other data does not
    with pytest.raises(WarmstartError, match="cannot resume .*test_file"):
        other = {**data, "test": test[:20]}
        warmstart.finetune(
            *FAST, init=str(tiny_pretrained), data=other, epochs=1, resume=str(tmp_path / "ft")
        )


def test_a_moved_config_asks_for_the_data_again(tiny_pretrained, frames, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path / "cache"))
    train, validation, test = frames
    data = {"train": train, "validation": validation, "test": test}
    warmstart.finetune(*FAST, "train.steps=2", init=str(tiny_pretrained), data=data, out=str(tmp_path / "ft"))
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path / "another-machine"))
    code, _, err = run(
        capsys, "finetune", "--config", tmp_path / "ft" / "config.yaml", "--out", tmp_path / "b"
    )
    assert_one_line_error(code, err, "was data given in memory", "pass the data again")


def test_finetune_on_a_dataset_dict(tiny_pretrained, frames, tmp_path):
    parts = {s: datasets.Dataset.from_list(f.to_dict("records")) for s, f in zip(SPLITS, frames)}
    result = warmstart.finetune(
        *FAST,
        "train.steps=2",
        init=str(tiny_pretrained),
        data=datasets.DatasetDict(parts),
        out=str(tmp_path / "ft"),
    )
    sizes = json.loads((tmp_path / "ft" / "test_metrics.json").read_text())["sizes"]
    assert sizes == {s: len(f) for s, f in zip(SPLITS, frames)}
    assert set(result.metrics) >= {"accuracy", "macro_f1"}


def test_errors_name_the_argument_not_the_cache(tiny_pretrained, frames, tmp_path, test_cache):
    train, validation, test = frames
    data = {"train": train, "validation": validation, "test": test}
    with pytest.raises(WarmstartError) as err:  # no 'stars' column: the data has no labels
        warmstart.finetune(
            *FAST, init=str(tiny_pretrained), data={**data, "label_column": "stars"}, out=str(tmp_path / "a")
        )
    message = str(err.value)
    assert "data['train'] (DataFrame, 160 rows) is a corpus dataset" in message and "now 'stars'" in message
    assert str(test_cache) not in message and ".jsonl" not in message
    with pytest.raises(WarmstartError) as err:  # a text column it lacks, found as the records are read
        warmstart.finetune(
            *FAST, init=str(tiny_pretrained), data={**data, "text_column": "review"}, out=str(tmp_path / "b")
        )
    message = str(err.value)
    assert "data['train'] (DataFrame, 160 rows)" in message and "'review'" in message
    assert str(test_cache) not in message and ".jsonl" not in message
    with pytest.raises(WarmstartError, match="test data given .* but no training data"):
        warmstart.finetune(*FAST, init=str(tiny_pretrained), data={"test": test}, out=str(tmp_path / "c"))
