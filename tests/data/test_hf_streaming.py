"""``hf:`` corpora are streamed (issue 43): the `datasets` library reads their rows as they come and writes
nothing to its cache, where a labeled set is loaded whole (an Arrow copy in the cache). A local folder given
as the name goes through the same `datasets.load_dataset` path as a hub name; each run is a child process
with its own HF_HOME, so the library's cache settings are its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

READ = """
import json, sys
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
label = None if sys.argv[2] == "corpus" else "label"
d = open_dataset("hf:" + sys.argv[1], DataOptions(label_column=label))
print(json.dumps({"kind": d.kind, "train": list(d.texts("train")), "all": len(list(d.texts("all")))}))
"""


def _read(folder, how, home):
    env = {**os.environ, "HF_HOME": str(home)}  # a local folder: no network asked, online or not
    env = {k: v for k, v in env.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    done = subprocess.run(
        [sys.executable, "-c", READ, str(folder), how], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    arrow = [p.name for p in home.rglob("*.arrow")] if home.exists() else []
    return json.loads(done.stdout.strip().splitlines()[-1]), arrow


def test_a_corpus_streams_and_a_labeled_set_loads_whole(tmp_path):
    folder = tmp_path / "reviews"
    folder.mkdir()
    rows = [{"text": f"review number {i} of a film", "label": i % 2} for i in range(300)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus, cached = _read(folder, "corpus", tmp_path / "hf-corpus")
    assert corpus["kind"] == "corpus" and corpus["all"] == 300
    assert set(corpus["train"]) <= {r["text"] for r in rows} and 250 < len(corpus["train"]) < 300
    assert cached == []  # streamed: no Arrow copy in the cache
    labeled, cached = _read(folder, "labeled", tmp_path / "hf-labeled")
    assert labeled["kind"] == "labeled" and labeled["all"] == 300
    assert cached  # the labeled set was loaded whole (the check above can see a copy)
