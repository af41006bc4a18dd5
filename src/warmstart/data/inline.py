"""Data given in memory (from Python) as a source spec, ``inline:<sha256 prefix of its content>``.

The records are written once to the cache as JSON lines (``inline/<hash>.jsonl``), with a human label beside
them (``inline/<hash>.json``: "data['train'] (DataFrame, 800 rows)"). Config files record the spec, not the
cache path, and the same content is the same spec, so a run resumes on it and its data fingerprint holds.
Every error raised while the data is read names the label, never the cache file the user did not write; a
spec whose file is missing (a config moved to another machine) is one clear line: give the data again.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from warmstart.atomic import write_atomic
from warmstart.data.dataset import DataOptions, Dataset
from warmstart.errors import WarmstartError
from warmstart.paths import cache_dir

PREFIX = "inline:"


def is_inline(name: str) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX)


def _key(spec: str) -> str:
    key = spec.removeprefix(PREFIX).strip()
    if not key or not all(c in "0123456789abcdef" for c in key):
        raise WarmstartError(
            f"'{spec}' is not an in-memory data spec (inline: and a hex content hash)",
            "pass the data again from Python (data=...), or a dataset name or file",
        )
    return key


def path_of(spec: str) -> Path:
    """The cache file holding the records of ``spec``."""
    return cache_dir() / "inline" / f"{_key(spec)}.jsonl"


def store(text: str, label: str) -> str:
    """Write JSON lines ``text`` to the cache (once) with its ``label``; the spec that names them."""
    spec = PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]
    path = path_of(spec)
    if not path.is_file():
        write_atomic(path, lambda fh: fh.write(text), text=True)
    about = json.dumps({"label": label}, ensure_ascii=False)
    beside = path.with_suffix(".json")
    if not beside.is_file() or beside.read_text(encoding="utf-8") != about:
        write_atomic(beside, lambda fh: fh.write(about), text=True)
    return spec


def label_of(spec: str) -> str:
    """The human label kept beside the data ("data['train'] (DataFrame, 800 rows)"), or a plain one."""
    try:
        return json.loads(path_of(spec).with_suffix(".json").read_text(encoding="utf-8"))["label"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"in-memory data {spec}"


def renamed(exc: WarmstartError, path: Path, label: str) -> WarmstartError:
    """``exc`` (its own class kept) with every mention of the cache file ``path`` replaced by ``label``; its
    "line N" (one record a line) is "row N", as a DataFrame or a list has rows."""

    def clean(text: str | None) -> str | None:
        if text is None:
            return None
        for shown in (str(path.resolve()), str(path), path.name, path.stem):
            text = re.sub(
                rf"\bline (\d+) of {re.escape(shown)}", lambda m, at=shown: f"row {m[1]} of {at}", text
            )
            text = text.replace(shown, label)
        return text

    out = copy.copy(exc)
    out.problem, out.fix = clean(exc.problem), clean(exc.fix)
    out.args = (f"{out.problem}; {out.fix}" if out.fix else out.problem,)
    return out


def open_inline(spec: str, options: DataOptions, open_file: Callable[[str, DataOptions], Dataset]) -> Dataset:
    """The dataset of an ``inline:`` spec, read by ``open_file`` (the catalog's reader of local files) and
    renamed: its name is the label, its source the spec, and its errors name the label."""
    path, label = path_of(spec), label_of(spec)
    if not path.is_file():
        raise WarmstartError(
            f"{spec} was data given in memory (from Python) and is not in this machine's cache",
            "pass the data again: finetune(data=...) with the same records",
        )
    try:
        dataset = open_file(str(path), options)
    except WarmstartError as exc:
        raise renamed(exc, path, label) from None

    def read() -> Iterator[dict]:
        try:
            yield from dataset.records("all")
        except WarmstartError as exc:
            raise renamed(exc, path, label) from None

    return Dataset(
        label,
        dataset.kind,
        f"data given in memory: {label}",
        "unknown (your own data)",
        spec,
        read,
        options,
    )
