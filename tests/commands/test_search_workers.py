"""`warmstart search --workers 2` (issue 42): two trials at once in two worker processes on this machine, each
grid point finished once, the trials asked for never exceeded, and the end (best link, search.json) as with
one worker."""

from __future__ import annotations

import json

import optuna
import pytest

from tests.helpers.cli import run

pytestmark = pytest.mark.integration

FAST = ["task.max_length=32", "train.batch_size=16", "eval_batch_size=256", "evals_per_epoch=1"]


def test_two_workers_run_the_grid_once_in_two_processes(tiny_pretrained, rt_small, tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text("train.lr: [1.0e-3, 3.0e-4, 1.0e-4, 3.0e-5]\n")
    out = tmp_path / "w"
    argv = ["search", "--init", tiny_pretrained, "--dataset", rt_small, "--out", out, "--space", space,
            "--trials", "4", "--workers", "2", "--final-seeds", "0", "--no-default", "--no-report",
            "--pruner", "none", "epochs=1", *FAST]  # fmt: skip
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    trials = optuna.load_study(study_name="search", storage=f"sqlite:///{out / 'search.db'}").get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 4
    assert sorted(t.params["train.lr"] for t in trials) == [3e-5, 1e-4, 3e-4, 1e-3]
    assert len({t.user_attrs["pid"] for t in trials}) == 2  # both workers ran trials
    assert sorted(p.name for p in (out / "trials").iterdir()) == [f"trial-{n:04d}" for n in range(4)]
    result = json.loads((out / "search.json").read_text())
    best = max(result["trials"], key=lambda t: t["value"])
    assert result["best"]["number"] == best["number"]
    assert (out / "best").is_symlink() and (out / "best" / "test_metrics.json").is_file()
