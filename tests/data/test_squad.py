"""SQuAD v1.1 / v2.0 JSON -> QA records, and clear errors for bad offsets and files that are not SQuAD."""

import json

import pytest

from warmstart.data.squad import iter_squad, read_squad
from warmstart.errors import WarmstartError

CONTEXT = "Paris is the capital of France. The Eiffel Tower was finished in 1889."


def squad(qas: list[dict], version: str = "1.1") -> dict:
    return {
        "version": version,
        "data": [{"title": "Paris", "paragraphs": [{"context": CONTEXT, "qas": qas}]}],
    }


def write(tmp_path, obj, name="squad.json"):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")
    return path


V1 = [
    {
        "id": "q1",
        "question": "What is the capital of France?",
        "answers": [{"text": "Paris", "answer_start": 0}, {"text": "Paris", "answer_start": 0}],
    },
    {
        "id": "q2",
        "question": "When was the tower finished?",
        "answers": [{"text": "1889", "answer_start": 65}],
    },
]


def test_read_v1(tmp_path):
    records = read_squad(write(tmp_path, squad(V1)))
    assert [r["id"] for r in records] == ["q1", "q2"]
    first = records[0]
    assert set(first) == {"text", "id", "question", "context", "answers"}
    assert first["text"] == first["context"] == CONTEXT
    assert first["question"] == "What is the capital of France?"
    assert first["answers"] == [{"text": "Paris", "answer_start": 0}] * 2
    assert records[1]["answers"] == [{"text": "1889", "answer_start": 65}]
    assert records[0]["context"] is records[1]["context"]  # one string per paragraph, not a copy per question


def test_read_v2_unanswerable(tmp_path):
    impossible = {
        "id": "q3",
        "question": "What is the capital of Spain?",
        "answers": [],
        "plausible_answers": [{"text": "Paris", "answer_start": 0}],
        "is_impossible": True,
    }
    v2 = [dict(q, is_impossible=False) for q in V1] + [impossible]
    records = list(iter_squad(write(tmp_path, squad(v2, "v2.0"))))
    assert [r["id"] for r in records] == ["q1", "q2", "q3"]
    assert records[2]["answers"] == []  # plausible answers are not answers
    assert records[1]["answers"] == [{"text": "1889", "answer_start": 65}]


def test_offset_mismatch_names_file_question_and_fix(tmp_path):
    bad = [dict(V1[1], answers=[{"text": "1889", "answer_start": 60}])]
    path = write(tmp_path, squad(bad), "train-v1.1.json")
    with pytest.raises(WarmstartError) as info:
        read_squad(path)
    message = str(info.value)
    assert "train-v1.1.json" in message and "q2" in message and "'1889'" in message
    assert "at character 65" in message  # where the text really is
    assert "fix answer_start" in info.value.fix


@pytest.mark.parametrize(
    "content, says",
    [
        ({"rows": [1, 2]}, 'no "data" list'),
        ([{"context": CONTEXT}], 'no "data" list'),
        ({"data": [{"title": "x"}]}, 'no "paragraphs"'),
        ({"data": [{"paragraphs": [{"text": CONTEXT, "qas": []}]}]}, 'lacks "context" or "qas"'),
        ({"data": [{"paragraphs": [{"context": CONTEXT, "qas": [{"question": "?"}]}]}]}, 'lacks "id"'),
        (squad([{"id": "q9", "question": "?", "answers": [{"text": "Paris"}]}]), "q9"),
        ("{not json", "not valid JSON"),
    ],
)
def test_not_squad_is_a_clear_error(tmp_path, content, says):
    path = write(tmp_path, content)
    with pytest.raises(WarmstartError, match="not (a SQuAD|valid JSON)") as info:
        read_squad(path)
    assert says in str(info.value) and str(path) in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(WarmstartError, match="no SQuAD file"):
        read_squad(tmp_path / "absent.json")
