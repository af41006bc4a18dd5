"""SQuAD v1.1 / v2.0 JSON files -> QA records.

A SQuAD file is ``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question", "answers":
[{"text", "answer_start"}], "is_impossible"?}]}]}]}``. Each question becomes one record
``{"text": context, "id", "question", "context", "answers": [{"text", "answer_start"}]}``; v2.0 questions
marked ``is_impossible`` get no answers (their ``plausible_answers`` are not answers). Every answer is checked
against its context (``context[answer_start:answer_start + len(text)] == text``), so a bad offset is an
error here rather than a silently wrong training target.

The JSON is loaded once; records share its context strings, and each article is dropped from the loaded tree
as soon as its records are made, so the file is not held twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from warmstart.errors import WarmstartError

_SHAPE = (
    'a SQuAD file is {"data": [{"paragraphs": [{"context": str, "qas": [{"id", "question", "answers"}]}]}]}'
)


def _shape_error(path: Path, where: str) -> WarmstartError:
    return WarmstartError(f"{path} is not a SQuAD v1.1/v2.0 file: {where}", _SHAPE)


def _load(path: Path) -> list:
    if not path.is_file():
        raise WarmstartError(f"no SQuAD file at {path}", "check the path")
    try:
        with open(path, encoding="utf-8") as fh:
            loaded = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WarmstartError(f"{path} is not valid JSON ({exc})", _SHAPE) from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("data"), list):
        raise _shape_error(path, 'it has no "data" list at the top')
    return loaded["data"]


def _answers(path: Path, qa: dict, context: str) -> list[dict]:
    if qa.get("is_impossible"):
        return []
    answers = qa.get("answers")
    if not isinstance(answers, list):
        raise _shape_error(path, f'question {qa["id"]} has no "answers" list')
    out = []
    for answer in answers:
        text = answer.get("text") if isinstance(answer, dict) else None
        start = answer.get("answer_start") if isinstance(answer, dict) else None
        if not isinstance(text, str) or type(start) is not int:
            raise _shape_error(path, f'question {qa["id"]} has an answer without "text" and "answer_start"')
        found = context[start : start + len(text)]
        if found != text:
            elsewhere = context.find(text)
            hint = f"the text occurs at character {elsewhere}" if elsewhere >= 0 else "the text is not in it"
            raise WarmstartError(
                f"{path}: question {qa['id']}: answer {text!r} at answer_start {start} does not match its "
                f"context, which has {found!r} there ({hint})",
                "fix answer_start so that context[answer_start:answer_start + len(text)] == text",
            )
        out.append({"text": text, "answer_start": start})
    return out


def iter_squad(path: str | os.PathLike) -> Iterator[dict]:
    """QA records of a SQuAD v1.1 or v2.0 JSON file, in file order (see the module docstring)."""
    path = Path(path)
    articles = _load(path)
    articles.reverse()  # pop from the end: each article is freed once read
    number = 0
    while articles:
        article = articles.pop()
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise _shape_error(path, f'article {number} has no "paragraphs" list')
        for paragraph in article["paragraphs"]:
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(context, str) or not isinstance(qas, list):
                raise _shape_error(path, f'a paragraph of article {number} lacks "context" or "qas"')
            for qa in qas:
                if not isinstance(qa, dict) or "id" not in qa or not isinstance(qa.get("question"), str):
                    raise _shape_error(path, f'a question of article {number} lacks "id" or "question"')
                yield {
                    "text": context,
                    "id": str(qa["id"]),
                    "question": qa["question"],
                    "context": context,
                    "answers": _answers(path, qa, context),
                }
        number += 1


def read_squad(path: str | os.PathLike) -> list[dict]:
    """All QA records of a SQuAD file (``list(iter_squad(path))``)."""
    return list(iter_squad(path))
