"""Multiple-choice files: rows with a list of choices (with or without a passage), or SWAG-style endings.

Layouts, in JSONL, CSV/TSV (a list cell written as JSON), Parquet, and JSON (a list of rows):
    plain       ``{"context"|"text", "choices": [...], "label": 1}`` (the context key is the text column)
    passage     ``{"passage"|"article"|"story"|"context", "question", "choices"|"options", "label"|"answer"}``
                (MCTest, RACE as the hub holds it: ``{"article", "question", "options", "answer": "B"}``)
    RACE files  one article per JSON object: ``{"article", "questions": [...], "options": [[...]],
                "answers": ["B", ...]}`` (a file, or a JSON list of them), one row per question
    SWAG        ``sent1`` (context), ``sent2`` (the start every ending continues), ``ending0`` ... ``endingN``
                and ``label``; each choice is ``sent2 + " " + ending_i``
A row with a question keeps its passage apart: ``{"text": question, "passage", "choices", "label",
"split_key": passage}`` (a hashed split keeps every question of a passage in one split); a row without one
is ``{"text": context, "choices", "label"}``. The right choice is given as a letter (``"A"`` is
the first), a 0-based index, or (in an ``answer`` column) the choice's text; records hold its index as text.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator
from pathlib import Path

from warmstart.data import compressed, readers
from warmstart.data.labels import LabelCheck
from warmstart.data.lines import Lines
from warmstart.data.object_rows import object_rows
from warmstart.errors import WarmstartError

ENDING = re.compile(r"^ending(\d+)$")
CHOICE_KEYS = ("choices", "options")
PASSAGE_KEYS = ("passage", "article", "story")  # "context" too, beside a question
ANSWER = "answer"


def is_choice_file(columns: list[str]) -> bool:
    return any(k in columns for k in CHOICE_KEYS) or any(ENDING.match(str(c)) for c in columns)


def _race_article(obj: dict) -> list[dict] | None:
    """One row per question of a RACE article object (plural keys), or None for any other object."""
    questions, options, answers = obj.get("questions"), obj.get("options"), obj.get("answers")
    if not isinstance(questions, list) or not isinstance(options, list):
        return None
    answers = answers if isinstance(answers, list) else []
    rows = []
    for i, question in enumerate(questions):
        row = {"article": obj.get("article"), "question": question}
        row["options"] = options[i] if i < len(options) else []
        if i < len(answers):
            row[ANSWER] = answers[i]
        rows.append(row)
    return rows


def json_rows(path: Path) -> list[tuple[dict, str]] | None:
    """(row, where) of a multiple-choice JSON file, or None when the file is not one (SQuAD JSON)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        return None  # the SQuAD reader words the error
    items = data if isinstance(data, list) else [data]
    rows = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            return None
        race = _race_article(item)
        if race is not None:
            rows += [(row, f"question {q} of item {n}") for q, row in enumerate(race, 1)]
        elif any(k in item for k in CHOICE_KEYS) or any(ENDING.match(str(k)) for k in item):
            rows.append((item, f"item {n}"))
        else:
            return None
    return rows


def is_choice_json(path: Path) -> bool:
    return bool(json_rows(path))


def _rows(path: Path) -> Iterator[tuple[dict, str]]:
    """(row dict, where) for every row of a json/jsonl/csv/tsv/parquet file, keeping non-string values."""
    suffix = compressed.kind(path)
    if suffix == ".json":
        yield from json_rows(path) or []
    elif suffix == ".jsonl":
        for obj, where in object_rows(path):
            race = _race_article(obj)
            for q, row in enumerate(race or [obj], 1):
                yield row, where + (f", question {q}" if race else "")
    elif suffix == ".parquet":
        yield from object_rows(path)
    else:
        rows = readers.csv_rows(iter(Lines(path)), suffix, path)
        _, header = next(rows, (0, []))
        for number, values in rows:
            if values:
                yield dict(zip(header, values)), f"line {number}"


def _choices(row: dict, where: str) -> list[str]:
    """The choices of a row: its choices/options list (a JSON list in a CSV cell, a {letter: text} map), or
    its SWAG endings."""
    key = next((k for k in CHOICE_KEYS if k in row), None)
    if key is None:
        endings = sorted((int(m.group(1)), k) for k in row if (m := ENDING.match(str(k))))
        start = str(row.get("sent2") or "").strip()
        return [f"{start} {row[k]}".strip() for _, k in endings if str(row[k]).strip()]
    choices = row[key]
    if isinstance(choices, str) and choices.lstrip().startswith("["):
        try:
            choices = json.loads(choices)
        except ValueError:
            pass
    if isinstance(choices, dict):
        choices = [choices[k] for k in sorted(choices)]
    if not isinstance(choices, list):
        raise WarmstartError(f"{where}: '{key}' is not a list", f'write "{key}": ["a", "b"]')
    return [str(c) for c in choices]


def answer_index(value, choices: list[str], column: str, where: str, labels: LabelCheck | None = None) -> int:
    """The 0-based index of the right choice given as ``value``: a letter (A = the first), an index, or the
    choice's text. A ``label`` column reads digits as an index first, an ``answer`` column as text first."""
    n = len(choices)
    text = value.strip() if isinstance(value, str) else None
    if text is not None and len(text) == 1 and text in string.ascii_uppercase:
        index = string.ascii_uppercase.index(text)
    elif text is not None and column != "label" and text in [c.strip() for c in choices]:
        index = [c.strip() for c in choices].index(text)
    else:
        shown = labels.label(value, where) if labels is not None else str(value).strip()
        index = int(shown) if shown.isdigit() else -1
    if not 0 <= index < n:
        letters = f"A to {string.ascii_uppercase[min(n, 26) - 1]}" if n else "none"
        raise WarmstartError(
            f"{where} has {column} {value!r} but {n} choices ({letters})",
            "give the right choice's letter, its 0-based index or (in an answer column) its text",
        )
    return index


def choice_record(
    row: dict,
    where: str,
    text_column: str = "text",
    label_column: str = "label",
    labels: LabelCheck | None = None,
    need_label: bool = True,
) -> dict:
    """A row of any layout above as a choice record (no ``label`` when ``need_label`` is False and it has
    none)."""
    choices = _choices(row, where)
    passage = next((row[k] for k in PASSAGE_KEYS if row.get(k) is not None), None)
    question = row.get("question")
    if question is not None and passage is None:
        passage = row.get("context")  # beside a question, the context is the passage
    if passage is not None and str(passage).strip():
        if question is None or not str(question).strip():
            raise WarmstartError(f"{where} has a passage but no question", "fill in its 'question'")
        record = {
            "text": str(question),
            "passage": str(passage),
            "choices": choices,
            "split_key": str(passage),
        }
    else:
        context = row.get(text_column, row.get("context", row.get("sent1", question)))
        if context is None or not str(context).strip():
            raise WarmstartError(
                f"{where} has no context or question ('{text_column}', 'context', 'sent1' or 'question')",
                "fill it in or name the column with --text-column",
            )
        record = {"text": str(context), "choices": choices}
    column = label_column if label_column in row else ANSWER if ANSWER in row else label_column
    value = row.get(column)
    if value is None or not str(value).strip():
        if not need_label:
            return record
        raise WarmstartError(f"{where} has no '{label_column}'", "give the index of the right choice")
    return {**record, "label": str(answer_index(value, choices, column, where, labels))}


def read_choice_file(
    path: str | Path, text_column: str = "text", label_column: str = "label"
) -> Iterator[dict]:
    """Choice records ``{"text", "passage"?, "choices": [...], "label": "index"}`` (a label 1.0 is "1")."""
    path = Path(path)
    labels = LabelCheck(path)
    for row, where in _rows(path):
        yield choice_record(row, f"{where} of {path}", text_column, label_column, labels)
