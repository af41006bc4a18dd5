"""Multiple choice with a passage: RACE and MCTest files read into records that keep the passage apart,
written as UnifiedQA writes them, and refused in one line when the answer or the question is missing."""

import json

import pytest

from warmstart.cli.main import main
from warmstart.data.catalog import open_dataset
from warmstart.data.choice import read_choice_file
from warmstart.data.to_text import to_text
from warmstart.errors import WarmstartError
from warmstart.inference.records import check_record, parse_record
from warmstart.tasks.text_to_text import text_records

# UnifiedQA's README, its MCTest example (the passage cut to its first two sentences)
BILLY = {
    "question": "Who was Billy?",
    "choices": ["The skinny kid", "A teacher", "A little kid", "The big kid"],
    "passage": "Billy was like a king on the school yard. A king without a queen.",
}
BILLY_INPUT = (
    "Who was Billy? \\n (A) The skinny kid (B) A teacher (C) A little kid (D) The big kid \\n "
    "Billy was like a king on the school yard. A king without a queen."
)
ARTICLE = "Tom lives in a small town. Every morning he walks his dog to the river before school."
RACE_ROWS = [
    {"example_id": "m1.txt", "article": ARTICLE, "question": "Where does Tom walk his dog?",
     "options": ["To the park", "To the river", "To school", "To the shop"], "answer": "B"},
    {"example_id": "m1.txt", "article": ARTICLE, "question": "When does Tom walk his dog?",
     "options": ["At night", "At noon", "In the morning", "After school"], "answer": "C"},
]  # fmt: skip


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_race_rows_keep_the_passage_apart(tmp_path):
    expected = [
        {
            "text": r["question"],
            "passage": ARTICLE,
            "choices": r["options"],
            "label": label,
            "split_key": ARTICLE,
        }
        for r, label in zip(RACE_ROWS, ["1", "2"])
    ]
    assert list(read_choice_file(write_jsonl(tmp_path / "race.jsonl", RACE_ROWS))) == expected
    as_json = tmp_path / "race_rows.json"  # the hub's rows as one JSON list
    as_json.write_text(json.dumps(RACE_ROWS), encoding="utf-8")
    assert list(read_choice_file(as_json)) == expected
    article = {  # RACE as released: one article per file, its questions, options and answers as lists
        "id": "middle1.txt",
        "article": ARTICLE,
        "questions": [r["question"] for r in RACE_ROWS],
        "options": [r["options"] for r in RACE_ROWS],
        "answers": ["B", "C"],
    }
    released = tmp_path / "middle1.json"
    released.write_text(json.dumps(article), encoding="utf-8")
    dataset = open_dataset(str(released))
    assert dataset.kind == "choice"
    assert {s: len(list(dataset.records(s))) for s in ("train", "validation", "test")} in (
        {"train": 2, "validation": 0, "test": 0},
        {"train": 0, "validation": 2, "test": 0},
        {"train": 0, "validation": 0, "test": 2},
    )  # the questions of one article share its split
    assert list(read_choice_file(released)) == expected


def test_mctest_table_with_the_answer_as_text_or_index(tmp_path):
    """A TSV in MCTest's spirit: story, question, the choices as a JSON list cell, the answer as its text; a
    JSONL with ``context`` beside the question and a 0-based ``label``."""
    tsv = tmp_path / "mc160.tsv"
    cell = json.dumps(BILLY["choices"])
    tsv.write_text(
        f"story\tquestion\tchoices\tanswer\n{BILLY['passage']}\tWho was Billy?\t{cell}\tThe big kid\n"
    )
    (record,) = read_choice_file(tsv)
    assert record == {"text": "Who was Billy?", "passage": BILLY["passage"], "choices": BILLY["choices"],
                      "label": "3", "split_key": BILLY["passage"]}  # fmt: skip
    generic = write_jsonl(tmp_path / "g.jsonl", [{"context": BILLY["passage"], "question": "Who was Billy?",
                                                 "choices": BILLY["choices"], "label": 3}])  # fmt: skip
    assert list(read_choice_file(generic)) == [record]
    assert open_dataset(str(tsv)).kind == "choice"


def test_the_unifiedqa_string():
    record = {
        "text": BILLY["question"],
        "passage": BILLY["passage"],
        "choices": BILLY["choices"],
        "label": "3",
    }
    assert to_text([record], "choice") == [{"text": BILLY_INPUT, "target": "The big kid"}]
    assert "\\n" in BILLY_INPUT and "\n" not in BILLY_INPUT  # backslash-n, not a newline, as UnifiedQA
    (pair,) = text_records([record], "choice", {}, "test")
    assert pair["choices"] == BILLY["choices"] and pair["choice"] == 3 and pair["scoring"] == "label"
    plain = {"text": "Which is the best conductor?", "choices": ["iron", "feather"], "label": "0"}
    assert to_text([plain], "choice")[0]["text"] == "Which is the best conductor? \n (A) iron (B) feather"


def test_inputs_to_predict_take_the_same_layout():
    line = json.dumps(
        {"question": BILLY["question"], "passage": BILLY["passage"], "choices": BILLY["choices"]}
    )
    record = parse_record(line, 1, "seq2seq")
    assert record["text"] == BILLY_INPUT and record["choices"] == BILLY["choices"]
    encoder = check_record({"article": ARTICLE, "question": "Q?", "options": ["a", "b"]}, 1, "choice")
    assert encoder["text"] == "Q?" and encoder["passage"] == ARTICLE and encoder["choices"] == ["a", "b"]
    assert check_record({"text": "plain", "target": "x"}, 1, "seq2seq") == {"text": "plain", "target": "x"}


@pytest.mark.parametrize(
    "row, message",
    [
        ({**RACE_ROWS[0], "answer": "E"}, "line 1 of {path} has answer 'E' but 4 choices (A to D)"),
        ({**RACE_ROWS[0], "question": " "}, "line 1 of {path} has a passage but no question"),
        ({k: v for k, v in RACE_ROWS[0].items() if k != "question"}, "has a passage but no question"),
        ({**RACE_ROWS[0], "answer": "To the moon"}, "has answer 'To the moon' but 4 choices (A to D)"),
    ],
)
def test_refusals_name_the_row(tmp_path, row, message):
    path = write_jsonl(tmp_path / "race.jsonl", [row])
    with pytest.raises(
        WarmstartError, match=message.format(path=path).replace("(", r"\(").replace(")", r"\)")
    ):
        open_dataset(str(path))


def test_refusal_on_the_command_line_is_one_line(tmp_path, capsys):
    path = write_jsonl(tmp_path / "race.jsonl", [RACE_ROWS[0], {**RACE_ROWS[1], "answer": "F"}])
    assert main(["data", "show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: line 2 of ") and "has answer 'F' but 4 choices" in err
    assert len(err.splitlines()) == 1
