"""The Python API example (examples/python_api.py, shown in the Python quick start), run as written: load a
run, predict a batch, encode, finetune from a DataFrame with a callback that stops early, export."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    return (ROOT / "examples" / "python_api.py").read_text(encoding="utf-8")


def test_the_python_quick_start_shows_the_example_file():
    page = (ROOT / "docs" / "get-started" / "quickstart-python.md").read_text(encoding="utf-8")
    assert '--8<-- "examples/python_api.py"' in page and "examples/python_api.py" in readme_text()


def readme_text() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_example_runs(tiny_pretrained, rt_small, tmp_path):
    """In a fresh directory holding reviews.csv (240 real rotten-tomatoes snippets) and, as runs/mini, a
    tiny pretrained run; in its own process, as a user's script runs."""
    shutil.copy(rt_small, tmp_path / "reviews.csv")
    shutil.copytree(tiny_pretrained, tmp_path / "runs" / "mini")
    script = tmp_path / "example.py"
    # the tiny model's settings: shorter inputs, and a rate at which its validation loss stalls within the
    # 3 epochs (at 1e-4 it falls slowly the whole time, and the callback rightly never stops it)
    code = readme_example().replace("max_length=64", "max_length=32").replace("lr=1e-4", "lr=3e-3")
    script.write_text(code, encoding="utf-8")
    env = {"WARMSTART_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()  # the evaluations' lines, then what the example prints
    at = next(i for i, line in enumerate(lines) if line.startswith("Run(finetune, 'runs/reviews', accuracy="))
    assert any(line.startswith("stopped by a callback after step") for line in lines[:at])
    records = (tmp_path / "runs/reviews/metrics.jsonl").read_text().splitlines()
    stop = [line for line in records if '"stop"' in line]  # StopWhenStale ended it, before the last step
    assert len(stop) == 1 and "validation loss not below" in stop[0] and '"step": 36' not in stop[0]
    saved = yaml.safe_load((tmp_path / "runs/reviews/config.yaml").read_text())
    assert saved["data"]["dataset"].startswith("inline:")  # the DataFrame, as a content hash (no cache path)
    preds = eval(lines[at + 1])  # noqa: S307 - the example prints a list of dicts
    assert [p["text"] for p in preds] == ["A warm, funny film.", "Dull and far too long."]
    assert all(abs(sum(p["probabilities"].values()) - 1) < 1e-5 for p in preds)
    assert (tmp_path / "hf/reviews/config.json").is_file()
