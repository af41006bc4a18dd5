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
from warmstart.data.lines import refuse_surrogates
from warmstart.data.object_rows import object_rows
from warmstart.data.squad import checked_answers
from warmstart.errors import WarmstartError

COLUMNS = ("question", "context", "answers")


def is_squad_rows(path: Path, columns: list) -> bool:
    """A JSON Lines or Parquet file whose rows hold a question, a context and answers."""
    return compressed.kind(path) in (".jsonl", ".parquet") and set(COLUMNS) <= set(map(str, columns))


def iter_squad_rows(path: str | Path) -> Iterator[dict]:
    """The QA records of a rows file, in file order (see the module)."""
    path = Path(path)
    for row, at in object_rows(path):
        where = f"{path} {at}"
        if not isinstance(row.get("question"), str) or not isinstance(row.get("context"), str):
            raise WarmstartError(f"{where} has no question or context text", "give every row both")
        refuse_surrogates(row, None, where)
        yield {
            "text": row["context"],
            "id": str(row.get("id", at)),
            "question": row["question"],
            "context": row["context"],
            "answers": checked_answers(row["answers"], row["context"], where),
        }
