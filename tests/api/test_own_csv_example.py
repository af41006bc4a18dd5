"""examples/own_csv_files.py, run as a user runs it: in its own process, in a fresh folder holding my_data/
with train.csv, validation.csv and test.csv (real rotten-tomatoes snippets, columns renamed to review and
sentiment) and a tiny pretrained run as the model to start from."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "own_csv_files.py"


def _my_data(rt_small: Path, folder: Path) -> dict[str, int]:
    """rt_small's 240 rows as three files of the user's own; {split: rows}."""
    frame = pd.read_csv(rt_small).rename(columns={"text": "review", "label": "sentiment"})
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    parts = {"train": frame[:160], "validation": frame[160:200], "test": frame[200:]}
    folder.mkdir()
    for name, part in parts.items():
        part.to_csv(folder / f"{name}.csv", index=False)
    return {name: len(part) for name, part in parts.items()}


def test_the_own_csv_example_runs_end_to_end(tiny_pretrained, rt_small, tmp_path):
    sizes = _my_data(rt_small, tmp_path / "my_data")
    shutil.copytree(tiny_pretrained, tmp_path / "mini")
    env = {"WARMSTART_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
           "MPLCONFIGDIR": str(tmp_path / "mpl")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "my_data", "mini"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    run = tmp_path / "runs" / "my-reviews"
    # the user's splits, read as they are: the sizes the run reports are the files' sizes
    metrics = json.loads((run / "test_metrics.json").read_text())
    assert metrics["sizes"] == sizes
    assert f"train: {sizes['train']} rows" in out
    # the config names where the data came from (in-memory frames: a content hash), never the cache
    config = (run / "config.yaml").read_text()
    assert str(tmp_path / "cache") not in config
    data = yaml.safe_load(config)["data"]
    assert all(data[f"{s}_file"].startswith("inline:") for s in sizes)
    assert (data["text_column"], data["label_column"]) == ("review", "sentiment")
    # the callback saw the step-0 evaluation and the end; the figure was drawn from run.history
    assert "best validation" in out and (run / "curves.png").stat().st_size > 10_000
    # top_k=None: every label with its score, best first, as transformers' pipeline gives them
    scored = next(line for line in out.splitlines() if line.startswith("[{'label'"))
    labels = eval(scored)  # noqa: S307 - the printed list of dicts
    assert sorted(d["label"] for d in labels) == ["fresh", "rotten"]
    assert labels[0]["score"] >= labels[1]["score"] and abs(sum(d["score"] for d in labels) - 1) < 1e-5
    # the export: a transformers directory whose card front matter the example printed
    card = (tmp_path / "exports" / "my-reviews" / "README.md").read_text()
    assert card.startswith("---\n") and "library_name: transformers" in out and "model-index" in card
    assert str(tmp_path) not in card
