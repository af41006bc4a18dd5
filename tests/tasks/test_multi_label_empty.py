"""A multi-label row with no label (an empty label: none of the labels apply) is read from CSV, JSONL and
Parquet, trained on and evaluated with an all-zero target (issue 40: it was refused as a missing value);
elsewhere an empty label is still a missing value."""

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from warmstart.commands.finetune import finetune
from warmstart.data.readers import read_file
from warmstart.errors import WarmstartError
from warmstart.inference.evaluate import evaluate_run
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.classification import ClassificationTask

LABELS = ["x|y", "", "y", "z|x", "", "z"]
FT = ["train.progress=false", "task.max_length=32", "train.batch_size=16", "task.problem=multi_label"]


def rows(wiki_extracts, n: int) -> list[dict]:
    return [{"text": t[:200], "label": LABELS[i % len(LABELS)]} for i, t in enumerate(wiki_extracts[:n])]


def write(path, records: list[dict]):
    if path.suffix == ".csv":
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, ["text", "label"])
            w.writeheader()
            w.writerows(records)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    else:
        pq.write_table(pa.Table.from_pylist(records), path)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_an_empty_multi_label_is_read_as_no_label(tmp_path, wiki_extracts, suffix):
    path = write(tmp_path / f"multi{suffix}", rows(wiki_extracts, 6))
    assert [r["label"] for r in read_file(path, label_column="label", empty_labels=True)] == LABELS
    with pytest.raises(WarmstartError, match="has no value for column 'label'"):  # single-label: a gap
        list(read_file(path, label_column="label"))


def test_its_target_is_all_zeros():
    task = ClassificationTask(TaskConfig(problem="multi_label"))
    records = [{"text": "a", "label": label} for label in LABELS]
    labels = task.labels(records)
    assert labels == ["x", "y", "z"] and task.empty_labels
    assert task.targets(records, labels, "t")[[1, 4]].sum() == 0
    assert not ClassificationTask(TaskConfig()).empty_labels


@pytest.mark.integration
def test_rows_without_labels_are_trained_on_and_evaluated(tiny_pretrained, wiki_extracts, tmp_path):
    path = write(tmp_path / "multi.jsonl", rows(wiki_extracts, 120))
    out = tmp_path / "ft"
    flags = {"init": str(tiny_pretrained), "data": {"dataset": str(path)}, "out": str(out), "epochs": 1}
    finetune(None, flags, FT)
    test = json.loads((out / "test_metrics.json").read_text())
    assert test["sizes"]["train"] + test["sizes"]["validation"] + test["sizes"]["test"] == 120
    assert {"f1", "exact_match"} <= test["test"].keys()
    result = evaluate_run(str(out), None, "test", files={"test": str(path)})  # `warmstart evaluate`
    assert result["examples"] == 120 and 0 <= result["metrics"]["exact_match"] <= 1
