"""SQuAD as rows (data/squad_rows.py): the `datasets` library's JSON Lines and Parquet layout of real wiki-qa
questions reads as the same QA records, an unanswerable row included; a bad answer is one line."""

import itertools
import json

import pytest

from warmstart.data.catalog import open_dataset
from warmstart.errors import WarmstartError


@pytest.fixture(scope="module")
def questions():
    rows = list(itertools.islice(open_dataset("wiki-qa").records("all"), 30))
    rows[3] = {**rows[3], "answers": []}  # SQuAD v2: unanswerable
    return rows


def _datasets_layout(record):
    answers = record["answers"]
    texts, starts = [a["text"] for a in answers], [a["answer_start"] for a in answers]
    return {"id": record["id"], "title": "t", "question": record["question"], "context": record["context"],
            "answers": {"text": texts, "answer_start": starts}}  # fmt: skip


def _fields(records):
    return [(r["id"], r["question"], r["context"], r["answers"]) for r in records]


def test_jsonl_and_parquet_rows_read_as_qa_records(questions, tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = [_datasets_layout(r) for r in questions]
    jsonl = tmp_path / "squad.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    parquet = tmp_path / "squad.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(parquet))
    listed = tmp_path / "listed.jsonl"  # answers as a list of objects, as SQuAD JSON writes them
    listed.write_text("".join(json.dumps({**r, "title": "t"}) + "\n" for r in questions), encoding="utf-8")
    for path in (jsonl, parquet, listed):
        data = open_dataset(str(path))
        assert data.kind == "qa", path
        assert _fields(data.records("all")) == _fields(questions), path


def test_a_bad_answer_names_its_line(questions, tmp_path):
    rows = [_datasets_layout(r) for r in questions[:5]]
    rows[2]["answers"]["answer_start"] = [rows[2]["answers"]["answer_start"][0] + 1]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(WarmstartError, match="line 3.*does not match its context"):
        open_dataset(str(path))
        list(open_dataset(str(path)).records("all"))
