"""Labeled and multiple-choice files read compressed (``.jsonl.gz``) exactly as the plain file (issue 43): the
catalog and the choice reader see the kind inside the compression; a missing compressed file is "no such
file", not "unknown dataset"."""

from __future__ import annotations

import gzip
import json

import pytest

from warmstart.data.catalog import open_dataset
from warmstart.data.options import DataOptions
from warmstart.errors import WarmstartError

LABELED = [
    {"text": f"snippet number {i} is {'good' if i % 2 else 'bad'}", "label": "ab"[i % 2]} for i in range(40)
]
CHOICE = [{"context": f"row {i} asks", "choices": [f"yes {i}", f"no {i}"], "label": i % 2} for i in range(40)]


def _write(path, rows, compress: bool):
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("rows, kind", [(LABELED, "labeled"), (CHOICE, "choice")], ids=["labeled", "choice"])
def test_a_gzipped_file_reads_as_the_plain_one(rows, kind, tmp_path):
    plain = open_dataset(str(_write(tmp_path / "d.jsonl", rows, False)), DataOptions())
    packed = open_dataset(str(_write(tmp_path / "e.jsonl.gz", rows, True)), DataOptions())
    assert plain.kind == packed.kind == kind
    for split in ("train", "validation", "test"):
        assert list(packed.records(split)) == list(plain.records(split))


def test_a_missing_compressed_file_is_no_such_file(tmp_path):
    with pytest.raises(WarmstartError, match="no such file|does not exist|not found"):
        open_dataset(str(tmp_path / "nope.jsonl.gz"), DataOptions())
