"""Data given in memory as ``inline:HASH`` (issue 37): the spec names content, not a cache path; every
reader error names the user's label; a spec whose data is not in the cache is one clear line."""

import json

import pytest

from warmstart.data import inline
from warmstart.data.catalog import open_data, open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError


def jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_the_spec_is_the_content(monkeypatch, tmp_path):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path))
    rows = [{"text": "a good film", "label": "pos"}, {"text": "a bad film", "label": "neg"}]
    spec = inline.store(jsonl(rows), "data['train'] (DataFrame, 2 rows)")
    assert spec.startswith("inline:") and str(tmp_path) not in spec
    assert inline.store(jsonl(rows), "data (list, 2 rows)") == spec  # same content, same spec
    assert inline.store(jsonl(rows[:1]), "data") != spec
    dataset = open_dataset(spec)
    assert dataset.name == "data (list, 2 rows)" and dataset.source == spec and dataset.kind == "labeled"
    assert list(dataset.records("all")) == rows


def test_errors_name_the_label_never_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path))
    spec = inline.store(
        jsonl([{"review": "a good film", "label": "pos"}]), "data['train'] (DataFrame, 1 rows)"
    )
    with pytest.raises(WarmstartError) as err:  # JSON lines: columns checked as the records stream
        list(open_dataset(spec).records("all"))
    assert "data['train'] (DataFrame, 1 rows)" in str(err.value) and "text" in str(err.value)
    assert str(tmp_path) not in str(err.value) and spec.removeprefix("inline:") not in str(err.value)
    # ... and through own splits, on line 3
    bad = [{"text": "one", "label": "a"}, {"text": "two", "label": "b"}, {"text": "three", "label": {"c": 1}}]
    spec = inline.store(jsonl(bad), "data['test'] (list, 3 rows)")
    with pytest.raises(WarmstartError) as err:
        list(open_data("", {"train": spec, "test": spec}).records("test"))
    assert "row 3 of data['test'] (list, 3 rows)" in str(err.value) and str(tmp_path) not in str(err.value)
    assert "line" not in str(err.value)  # a list or DataFrame has rows, not lines


def test_data_not_in_the_cache_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path))
    with pytest.raises(WarmstartError, match="was data given in memory .* pass the data again"):
        open_dataset("inline:0123456789abcdef0123", DataOptions())
    with pytest.raises(WarmstartError, match="is not an in-memory data spec"):
        open_dataset("inline:../../etc/passwd")
