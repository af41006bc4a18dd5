"""SQuAD v1.1 / v2.0 JSON files -> QA records.

A SQuAD file is ``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question", "answers":
[{"text", "answer_start"}], "is_impossible"?}]}]}]}``. Each question becomes one record
``{"text": context, "id", "question", "context", "answers": [{"text", "answer_start"}]}``; v2.0 questions
marked ``is_impossible`` get no answers (their ``plausible_answers`` are not answers). Every answer is checked
against its context (``context[answer_start:answer_start + len(text)] == text``; the text is not blank; the
offset is not negative nor past the context's end), so a bad answer is an error naming the file, the article,
paragraph and question ids, rather than a silently wrong training target (Hugging Face's run_qa would label
such an example "no answer" and train on it). Text with an unpaired surrogate (``"\\ud800"``, not Unicode) is
refused the same way. A leading UTF-8 byte-order mark is allowed.

The JSON is loaded once; records share its context strings, and each article is dropped from the loaded tree
as soon as its records are made, so the file is not held twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from warmstart.data.lines import refuse_surrogates
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
        with open(path, encoding="utf-8-sig") as fh:
            loaded = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WarmstartError(f"{path} is not valid JSON ({exc})", _SHAPE) from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("data"), list):
        raise _shape_error(path, 'it has no "data" list at the top')
    return loaded["data"]


def answer_problem(context: str, text: str, start: int) -> str | None:
    """What is wrong with an answer ``text`` at character ``start`` of ``context``; None when it is there."""
    if not text.strip():
        return f"answer {text!r} at answer_start {start} is blank"
    if start < 0:
        return f"answer {text!r} has a negative answer_start {start}"
    if start + len(text) > len(context):
        where = "lies past" if start >= len(context) else "runs past"
        return (
            f"answer {text!r} at answer_start {start} {where} the end of its context "
            f"({len(context)} characters)"
        )
    found = context[start : start + len(text)]
    if found == text:
        return None
    elsewhere = context.find(text)
    hint = f"the text occurs at character {elsewhere}" if elsewhere >= 0 else "the text is not in it"
    return (
        f"answer {text!r} at answer_start {start} does not match its context, which has {found!r} there "
        f"({hint})"
    )


ANSWER_FIX = (
    "fix answer_start so that context[answer_start:answer_start + len(text)] == text, or drop that answer"
)


def checked_answers(answers, context: str, where: str) -> list[dict]:
    """``answers`` as [{"text", "answer_start"}], read from that or from the `datasets` library's parallel
    lists ({"text": [...], "answer_start": [...]}), each checked against ``context``; errors begin with
    ``where``."""
    if isinstance(answers, dict):
        texts, starts = answers.get("text"), answers.get("answer_start")
        if not isinstance(texts, list) or not isinstance(starts, list) or len(texts) != len(starts):
            raise WarmstartError(
                f"{where}: answers {str(answers)[:80]} has no text and answer_start lists of one length",
                'write "answers": {"text": ["..."], "answer_start": [0]} (empty lists when unanswerable)',
            )
        answers = [{"text": t, "answer_start": s} for t, s in zip(texts, starts, strict=True)]
    if not isinstance(answers, list):
        raise WarmstartError(f"{where}: answers is neither a list nor text/answer_start lists", ANSWER_FIX)
    out = []
    for answer in answers:
        text = answer.get("text") if isinstance(answer, dict) else None
        start = answer.get("answer_start") if isinstance(answer, dict) else None
        if not isinstance(text, str) or type(start) is not int:
            raise WarmstartError(
                f"{where}: an answer has no text or no integer answer_start",
                'give every answer {"text": str, "answer_start": int}',
            )
        problem = answer_problem(context, text, start)
        if problem:  # a bad offset would silently train the window on "no answer"
            raise WarmstartError(f"{where}: {problem}", ANSWER_FIX)
        out.append({"text": text, "answer_start": start})
    return out


def _answers(path: Path, qa: dict, context: str, where: str) -> list[dict]:
    if qa.get("is_impossible"):
        return []
    answers = qa.get("answers")
    if not isinstance(answers, list):
        raise _shape_error(path, f'{where} has no "answers" list')
    if not answers and qa.get("is_impossible") is False:
        raise WarmstartError(
            f"{path}: {where} says is_impossible: false but has no answers",
            'give it its answers, or mark it "is_impossible": true',
        )
    out = []
    for answer in answers:
        text = answer.get("text") if isinstance(answer, dict) else None
        start = answer.get("answer_start") if isinstance(answer, dict) else None
        if not isinstance(text, str) or type(start) is not int:
            raise _shape_error(path, f'{where} has an answer without "text" and "answer_start"')
        problem = answer_problem(context, text, start)
        if problem:
            raise WarmstartError(f"{path}: {where}: {problem}", ANSWER_FIX)
        out.append({"text": text, "answer_start": start})
    return out


def _paragraph(path: Path, paragraph, where: str) -> Iterator[dict]:
    context = paragraph.get("context") if isinstance(paragraph, dict) else None
    qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
    if not isinstance(context, str) or not isinstance(qas, list):
        raise _shape_error(path, f'{where} lacks "context" or "qas"')
    refuse_surrogates(context, None, f"{path}: {where}: context")
    for qa in qas:
        if not isinstance(qa, dict) or "id" not in qa or not isinstance(qa.get("question"), str):
            raise _shape_error(path, f'a question of {where} lacks "id" or "question"')
        at = f"{where}, question {qa['id']}"
        refuse_surrogates(qa, None, f"{path}: {at}")
        yield {
            "text": context,
            "id": str(qa["id"]),
            "question": qa["question"],
            "context": context,
            "answers": _answers(path, qa, context, at),
        }


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
        for p, paragraph in enumerate(article["paragraphs"]):
            yield from _paragraph(path, paragraph, f"article {number}, paragraph {p}")
        number += 1


def read_squad(path: str | os.PathLike) -> list[dict]:
    """All QA records of a SQuAD file (``list(iter_squad(path))``)."""
    return list(iter_squad(path))
