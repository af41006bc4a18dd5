"""Multiple-choice files: JSONL with a list of choices, or SWAG-style columns ending0, ending1, ...

JSONL: ``{"context": ..., "choices": ["...", "..."], "label": 1}`` (the context key is the text column).
SWAG CSV/TSV/JSONL/Parquet: ``sent1`` (context), ``sent2`` (the start every ending continues), ``ending0`` ...
``endingN`` and ``label``; each choice is ``sent2 + " " + ending_i``. Labels are 0-based indices.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from warmstart.data import readers
from warmstart.data.labels import LabelCheck
from warmstart.data.lines import Lines
from warmstart.errors import WarmstartError

ENDING = re.compile(r"^ending(\d+)$")


def is_choice_file(columns: list[str]) -> bool:
    return "choices" in columns or any(ENDING.match(str(c)) for c in columns)


def _rows(path: Path) -> Iterator[tuple[dict, str]]:
    """(row dict, where) for every row of a jsonl/csv/tsv/parquet file, keeping non-string values."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        for number, line in enumerate(Lines(path), 1):
            if line.strip():
                yield readers.json_object(line, path, number), f"line {number}"
    elif suffix == ".parquet":
        n = 0
        for batch in readers.parquet_file(path).iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                n += 1
                yield row, f"row {n}"
    else:
        rows = readers.csv_rows(iter(Lines(path)), suffix, path)
        _, header = next(rows, (0, []))
        for number, values in rows:
            if values:
                yield dict(zip(header, values)), f"line {number}"


def read_choice_file(
    path: str | Path, text_column: str = "text", label_column: str = "label"
) -> Iterator[dict]:
    """Choice records ``{"text": context, "choices": [...], "label": "index"}`` (a label 1.0 is "1")."""
    path = Path(path)
    labels = LabelCheck(path)
    for row, where in _rows(path):
        if "choices" in row:
            context = row.get(text_column, row.get("context"))
            choices = row["choices"]
            if not isinstance(choices, list):
                raise WarmstartError(
                    f"{where} of {path}: 'choices' is not a list", 'write "choices": ["a", "b"]'
                )
        else:
            context = row.get("sent1", row.get(text_column))
            endings = sorted((int(m.group(1)), k) for k in row if (m := ENDING.match(str(k))))
            start = str(row.get("sent2") or "").strip()
            choices = [f"{start} {row[k]}".strip() for _, k in endings if str(row[k]).strip()]
        if context is None or not str(context).strip():
            raise WarmstartError(
                f"{where} of {path} has no context ('{text_column}', 'context' or 'sent1')",
                "fill it in or name the column with --text-column",
            )
        label = row.get(label_column)
        if label is None or not str(label).strip():
            raise WarmstartError(
                f"{where} of {path} has no '{label_column}'", "give the index of the right choice"
            )
        label = labels.label(label, where)
        yield {"text": str(context), "choices": [str(c) for c in choices], "label": label}
