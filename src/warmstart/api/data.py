"""Data given from Python, as the commands read it: a dataset name, a path, ``hf:NAME`` stay as they are;
in-memory data (a list of dicts or of strings, a dict of columns, a pandas DataFrame, a ``datasets.Dataset``)
is written once as JSON lines into the cache (``inline/<sha256 of its content>.jsonl``) and that file is
used. The same data is the same file, so a run resumes on it and its fingerprint (RUN/data.json) holds; its
config.yaml names the file, which can be read back."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from warmstart.atomic import write_atomic
from warmstart.errors import WarmstartError
from warmstart.paths import cache_dir


def as_source(data, what: str = "data") -> str:
    """A name or path the commands read (see the module docstring)."""
    if isinstance(data, str | os.PathLike):
        return str(data)
    rows = rows_of(data, what)
    try:
        text = "".join(json.dumps(row, ensure_ascii=False, default=_plain) + "\n" for row in rows)
    except (TypeError, ValueError) as exc:
        raise WarmstartError(
            f"{what} holds a value JSON cannot write ({exc})", "give text and labels"
        ) from None
    path = cache_dir() / "inline" / f"{hashlib.sha256(text.encode('utf-8')).hexdigest()[:20]}.jsonl"
    if not path.is_file():
        write_atomic(path, lambda fh: fh.write(text), text=True)
    return str(path)


def rows_of(data, what: str) -> list[dict]:
    """The records of in-memory ``data``: strings become {"text": ...}, (text, label) pairs
    {"text", "label"}, a DataFrame or dict of columns one record per row."""
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        rows = data.to_dict("records")
    elif hasattr(data, "column_names") and hasattr(data, "to_list"):  # a datasets.Dataset
        rows = data.to_list()
    elif isinstance(data, dict):
        rows = _columns(data, what)
    elif isinstance(data, Iterable):
        rows = [_row(item, i, what) for i, item in enumerate(data)]
    else:
        raise WarmstartError(
            f"{what} is a {type(data).__name__}",
            "pass a dataset name or path, a list of dicts or strings, a DataFrame or a datasets.Dataset",
        )
    if not rows:
        raise WarmstartError(f"{what} is empty", "pass at least one record")
    return rows


def _row(item, i: int, what: str) -> dict:
    if isinstance(item, str):
        return {"text": item}
    if isinstance(item, dict):
        return item
    if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str):
        return {"text": item[0], "label": item[1]}
    raise WarmstartError(
        f"item {i} of {what} is a {type(item).__name__}",
        'give dicts like {"text": ..., "label": ...}, strings, or (text, label) pairs',
    )


def _columns(data: dict, what: str) -> list[dict]:
    lengths = {k: len(v) for k, v in data.items() if isinstance(v, list | tuple)}
    if len(lengths) != len(data) or len(set(lengths.values())) > 1:
        raise WarmstartError(
            f"{what} is a dict but not one of equal-length columns ({lengths})",
            'give columns like {"text": [...], "label": [...]} or a list of records',
        )
    keys = list(data)
    return [dict(zip(keys, values)) for values in zip(*(data[k] for k in keys))]


def _plain(value):
    """numpy scalars and other values JSON cannot write (a DataFrame's int64 labels)."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")
