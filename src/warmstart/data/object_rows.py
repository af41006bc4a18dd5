"""The rows of a JSON Lines or Parquet file as they are: (row dict, where) with "line N" / "row N", values
kept as the file holds them (lists, numbers, nested objects), for readers that take whole objects (SQuAD
rows, multiple-choice files) rather than the text and label columns of data/readers.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from warmstart.data import compressed
from warmstart.data.lines import Lines
from warmstart.data.readers import json_object, parquet_file


def object_rows(path: Path) -> Iterator[tuple[dict, str]]:
    """(row, where) of every row of a .jsonl (compressed or not) or .parquet file, in file order."""
    if compressed.kind(path) == ".parquet":
        n = 0
        for batch in parquet_file(path).iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                n += 1
                yield row, f"row {n}"
        return
    lines = Lines(path)
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield json_object(line, path, number), f"line {number}"
    lines.warn()
