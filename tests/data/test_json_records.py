"""A .json file of rows (a list of objects, or that list under "data") is a table like JSON lines: the same
records, its columns named by flags, a bad row said in one line; SQuAD and multiple-choice JSON keep their
own readers."""

import json

import pytest

from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError


@pytest.fixture
def rows(rt_small):
    import csv

    return [
        {"review": r["text"], "stars": r["label"]} for r in csv.DictReader(open(rt_small, encoding="utf-8"))
    ]


def _write(tmp_path, name, value):
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def test_a_list_of_rows_reads_as_json_lines_do(rows, tmp_path):
    options = DataOptions(text_column="review", label_column="stars")
    lines = tmp_path / "rows.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    expected = list(open_dataset(str(lines), options).records("all"))
    for name, value in (("rows.json", rows), ("wrapped.json", {"data": rows})):
        data = open_dataset(_write(tmp_path, name, value), options)
        assert data.kind == "labeled" and list(data.records("all")) == expected
        assert data.counts() == open_dataset(str(lines), options).counts()
    corpus = open_dataset(_write(tmp_path, "texts.json", [{"text": r["review"]} for r in rows[:5]]))
    assert corpus.kind == "corpus" and [r["text"] for r in corpus.records("all")] == [
        r["review"] for r in rows[:5]
    ]


def test_a_bad_row_is_one_line_naming_it(rows, tmp_path):
    broken = rows[:3] + [{"review": "no label here"}] + rows[3:]
    path = _write(tmp_path, "broken.json", broken)
    with pytest.raises(WarmstartError, match=r"row 4 of .*broken.json has no key 'stars' \(keys: review\)"):
        list(open_dataset(path, DataOptions(text_column="review", label_column="stars")).records("all"))
    with pytest.raises(WarmstartError, match="has no column 'text'.*--text-column"):
        open_dataset(_write(tmp_path, "rows.json", rows))


def test_squad_and_choice_json_keep_their_readers(tmp_path):
    answers = [{"text": "France", "answer_start": 12}]
    qas = [{"id": "1", "question": "Where is Paris?", "answers": answers}]
    squad = {"data": [{"paragraphs": [{"context": "Paris is in France.", "qas": qas}]}]}
    assert open_dataset(_write(tmp_path, "squad.json", squad)).kind == "qa"
    choice = [{"question": "2 + 2?", "choices": ["3", "4"], "label": 1}]
    assert open_dataset(_write(tmp_path, "mc.json", choice)).kind == "choice"
