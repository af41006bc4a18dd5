"""A .json file of rows: a list of objects (``[{"text": ..., "label": ...}, ...]``, what pandas'
``to_json(orient="records")`` and `datasets`' ``to_json(lines=False)`` write), or such a list under
``"data"`` (the layout `datasets`' json loader reads with ``field="data"``). Read as JSON lines are, row by
row; any other JSON (SQuAD's articles, a multiple-choice file) is left to its own reader."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path


def json_records(path: str | Path) -> list[dict] | None:
    """The rows of a .json file of rows, or None when it is another JSON (or not JSON: its reader says)."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)  # read once while the file is unchanged


@lru_cache(maxsize=1)
def _parsed(path: str, mtime_ns: int, size: int) -> list[dict] | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError, OSError):
        return None
    if isinstance(data, dict) and list(data) == ["data"]:
        data = data["data"]
    if not isinstance(data, list) or not data:
        return None
    if not all(isinstance(row, dict) for row in data) or any("paragraphs" in row for row in data):
        return None  # SQuAD's {"data": [{"paragraphs": ...}]}, or not rows
    return data
