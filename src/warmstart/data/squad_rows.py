"""QA records from rows: a JSON Lines or Parquet file of one question per row, as the `datasets` library
writes SQuAD (``squad.to_json("train.jsonl")``, ``to_parquet``): ``id``, ``title``?, ``question``,
``context``, ``answers`` as ``{"text": [...], "answer_start": [...]}`` (or a list of ``{"text",
"answer_start"}``; empty: unanswerable, SQuAD v2). Each row becomes the record SQuAD JSON gives
(data/squad.py), its answers checked against the context the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from warmstart.data import compressed
from warmstart.data.lines import Lines, refuse_surrogates
from warmstart.data.readers import json_object, parquet_file
from warmstart.data.squad import ANSWER_FIX, answer_problem
from warmstart.errors import WarmstartError

COLUMNS = ("question", "context", "answers")


def is_squad_rows(path: Path, columns: list) -> bool:
    """A JSON Lines or Parquet file whose rows hold a question, a context and answers."""
    return compressed.kind(path) in (".jsonl", ".parquet") and set(COLUMNS) <= set(map(str, columns))


def _rows(path: Path) -> Iterator[tuple[dict, str]]:
    if compressed.kind(path) == ".parquet":
        offset = 0
        for batch in parquet_file(path).iter_batches(batch_size=4096):
            for i, row in enumerate(batch.to_pylist()):
                yield row, f"row {offset + i + 1}"
            offset += batch.num_rows
        return
    lines = Lines(path)
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield json_object(line, path, number), f"line {number}"
    lines.warn()


def _answers(row: dict, where: str) -> list[dict]:
    answers = row["answers"]
    if isinstance(answers, dict):  # the datasets layout: parallel lists
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
            raise WarmstartError(f"{where}: an answer has no text or no integer answer_start", ANSWER_FIX)
        problem = answer_problem(row["context"], text, start)
        if problem:
            raise WarmstartError(f"{where}: {problem}", ANSWER_FIX)
        out.append({"text": text, "answer_start": start})
    return out


def iter_squad_rows(path: str | Path) -> Iterator[dict]:
    """The QA records of a rows file, in file order (see the module)."""
    path = Path(path)
    for row, at in _rows(path):
        where = f"{path} {at}"
        if not isinstance(row.get("question"), str) or not isinstance(row.get("context"), str):
            raise WarmstartError(f"{where} has no question or context text", "give every row both")
        refuse_surrogates(row, None, where)
        yield {
            "text": row["context"],
            "id": str(row.get("id", at)),
            "question": row["question"],
            "context": row["context"],
            "answers": _answers(row, where),
        }
