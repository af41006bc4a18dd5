"""Data given from Python, as the commands read it: a dataset name, a path, ``hf:NAME`` stay as they are;
in-memory data (a list of dicts or of strings, a dict of columns, a pandas DataFrame, a ``datasets.Dataset``)
is written once into the cache and named by a source spec, ``inline:<sha256 of its content>``, with a label
kept beside it ("data['train'] (DataFrame, 800 rows)": data/inline.py). The same data is the same spec, so a
run resumes on it and its fingerprint (RUN/data.json) holds; config.yaml records the spec, not a cache path,
and errors name the label.

``data_section`` reads finetune's ``data=``: one dataset, a dict of splits (``{"train": df, "validation":
df2, "test": df3}``, ``dev`` for validation; values in any of the forms above, or file paths), a
``datasets.DatasetDict``, or a dict of data settings (``dict(dataset=df, label_column="stars")``,
``dict(train_file="a.csv")``), which may hold splits too."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path

from warmstart.api import checks
from warmstart.data import inline
from warmstart.data.options import FinetuneDataConfig
from warmstart.errors import WarmstartError

SPLIT_KEYS = {"train": "train", "validation": "validation", "dev": "validation", "test": "test"}
SETTINGS = {f.name for f in dataclasses.fields(FinetuneDataConfig)}
SOURCES = ("dataset", "train_file", "validation_file", "test_file")  # settings that name data


def data_section(data, fn: str = "finetune") -> dict | None:
    """The ``data`` config section of finetune's ``data=`` (see the module docstring); None for None.
    ``fn``: the API function whose argument it is, for errors."""
    if data is None:
        return None
    if not _is_section(data):
        return {"dataset": as_source(data, "data", fn)}
    section: dict = {}
    for key, value in data.items():
        where = f"data[{key!r}]"
        name = f"{SPLIT_KEYS[key]}_file" if key in SPLIT_KEYS else key
        if name in section:
            raise WarmstartError(
                f"data gives the {name.removesuffix('_file')} split twice ({_twice(data, name)})",
                "give each split once (dev and validation are the same split)",
            )
        section[name] = as_source(value, where, fn) if name in SOURCES and value is not None else value
    return section


def _twice(data: dict, name: str) -> str:
    split = name.removesuffix("_file")
    return " and ".join(k for k in data if SPLIT_KEYS.get(k) == split or k == name)


def _is_section(data) -> bool:
    """A dict of splits or of data settings (not a dict of columns); refuses a mix with other keys."""
    if not isinstance(data, dict):
        return False
    known = [k for k in data if k in SPLIT_KEYS or k in SETTINGS]
    if not known:
        return False
    dataset_dict = type(data).__name__ == "DatasetDict"
    other = [k for k in data if k not in known]
    if other and (dataset_dict or not all(isinstance(v, list | tuple) for v in data.values())):
        what = "a DatasetDict" if dataset_dict else "a dict of splits or settings"
        keys = ", ".join(map(str, other))
        raise WarmstartError(
            f"data is {what} with keys that are neither splits nor data settings: {keys}",
            "keep train, validation (or dev) and test"
            + ("" if dataset_dict else ", and settings such as label_column")
            + ", e.g. data={'train': df, 'test': df2}",
        )
    return not other


def as_source(data, what: str = "data", fn: str = "finetune") -> str:
    """A name or path the commands read (see the module docstring); a name or path that cannot be one (a
    5 MB string, a NUL) is refused as the argument ``what`` of ``fn``."""
    if isinstance(data, str | os.PathLike):
        return checks.path(fn, what, data)
    rows = rows_of(data, what, fn)
    try:
        text = "".join(json.dumps(row, ensure_ascii=False, default=_plain) + "\n" for row in rows)
    except (TypeError, ValueError) as exc:
        raise WarmstartError(
            f"{what} holds a value JSON cannot write ({exc})", "give text and labels"
        ) from None
    return inline.store(text, f"{what} ({_form(data)}, {len(rows):,} rows)")


def _form(data) -> str:
    """What the user passed, in the words of its library."""
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        return "DataFrame"
    if hasattr(data, "column_names") and hasattr(data, "to_list"):
        return "datasets.Dataset"
    return "dict of columns" if isinstance(data, dict) else type(data).__name__


def rows_of(data, what: str, fn: str = "finetune") -> list[dict]:
    """The records of in-memory ``data``: strings become {"text": ...}, (text, label) pairs
    {"text", "label"}, a DataFrame or dict of columns one record per row; errors name the argument
    ``what`` of ``fn``."""
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        rows = _unicode(data.to_dict("records"), what, fn)
    elif hasattr(data, "column_names") and hasattr(data, "to_list"):  # a datasets.Dataset
        rows = _unicode(data.to_list(), what, fn)
    elif isinstance(data, dict):
        rows = _unicode(_columns(data, what), what, fn)
    elif isinstance(data, Iterable):
        rows = [_row(item, i, what, fn) for i, item in enumerate(data)]
    else:
        raise WarmstartError(
            f"{what} is a {type(data).__name__}",
            "pass a dataset name or path, a list of dicts or strings, a DataFrame or a datasets.Dataset",
        )
    if not rows:
        raise WarmstartError(f"{what} is empty", "pass at least one record")
    return rows


def _unicode(rows: list[dict], what: str, fn: str) -> list[dict]:
    """``rows`` of a table, each refused when it holds text that is not valid Unicode (a lone surrogate)."""
    for i, row in enumerate(rows):
        checks.unicode(fn, f"{what} row {i}", row)
    return rows


def _row(item, i: int, what: str, fn: str) -> dict:
    """One item of a list: a text, a record or a (text, label) pair, as a record of valid Unicode."""
    where = f"{what}[{i}]"
    if isinstance(item, str):
        return {"text": checks.text(fn, where, item)}
    if isinstance(item, dict):
        checks.unicode(fn, where, item)
        return item
    if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str):
        checks.unicode(fn, where, {"text": item[0], "label": item[1]})
        return {"text": item[0], "label": item[1]}
    raise checks.ArgumentTypeError(
        f"{fn}: {what}[{i}] must be a text, a dict or a (text, label) pair, got {checks.type_name(item)}",
        'give strings, dicts like {"text": ..., "label": ...}, or (text, label) pairs',
    )


def _columns(data: dict, what: str) -> list[dict]:
    lengths = {k: len(v) for k, v in data.items() if isinstance(v, list | tuple)}
    if len(lengths) != len(data) or len(set(lengths.values())) > 1:
        raise WarmstartError(
            f"{what} is a dict but not one of equal-length columns ({lengths})",
            'give columns like {"text": [...], "label": [...]}, splits like {"train": df, "test": df2}, or '
            "a list of records",
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
