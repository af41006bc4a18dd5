"""`warmstart search --workers 2` (issue 42): two trials at once in two worker processes on this machine, each
drawing its own configurations from TPE's range (with one seed per process both ran the same learning rates),
the trials asked for never exceeded, and the end (best link, search.json) as with one worker. A grid shared
by processes is tests/commands/test_search.py::test_two_processes_share_one_study."""

from __future__ import annotations

import json

import optuna
import pytest

from tests.helpers.cli import run

pytestmark = pytest.mark.integration

FAST = ["task.max_length=32", "train.batch_size=16", "eval_batch_size=256", "evals_per_epoch=1"]


def test_two_workers_draw_different_configurations(tiny_pretrained, rt_small, tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text("train.lr: {type: float, low: 3.0e-5, high: 1.0e-3, log: true}\n")
    out = tmp_path / "w"
    argv = ["search", "--init", tiny_pretrained, "--dataset", rt_small, "--out", out, "--space", space,
            "--trials", "4", "--workers", "2", "--final-seeds", "0", "--no-default", "--no-report",
            "--pruner", "none", "epochs=1", *FAST]  # fmt: skip
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    trials = optuna.load_study(study_name="search", storage=f"sqlite:///{out / 'search.db'}").get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 4
    rates = [t.params["train.lr"] for t in trials]
    assert len(set(rates)) == 4 and all(3e-5 <= r <= 1e-3 for r in rates), rates
    assert len({t.user_attrs["pid"] for t in trials}) == 2  # both workers ran trials
    assert sorted(p.name for p in (out / "trials").iterdir()) == [f"trial-{n:04d}" for n in range(4)]
    result = json.loads((out / "search.json").read_text())
    best = max(result["trials"], key=lambda t: t["value"])
    assert result["best"]["number"] == best["number"]
    assert (out / "best").is_symlink() and (out / "best" / "test_metrics.json").is_file()


def test_the_seeded_reruns_run_side_by_side(tiny_pretrained, rt_small, tmp_path, capsys):
    """With --workers 2 the best configuration's and the default recipe's seeded re-runs run at once, each in
    a worker: they ran one after the other (6 finetunes in a row by default)."""
    space = tmp_path / "space.yaml"
    space.write_text("train.lr: {type: float, low: 3.0e-5, high: 1.0e-3, log: true}\n")
    out = tmp_path / "s"
    argv = ["search", "--init", tiny_pretrained, "--dataset", rt_small, "--out", out, "--space", space,
            "--trials", "2", "--workers", "2", "--final-seeds", "1", "--no-report", "--pruner", "none",
            "epochs=1", *FAST]  # fmt: skip
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    spans = {}
    for name in ("default", "final"):
        times = [json.loads(line)["time"] for line in (out / name / "metrics.jsonl").read_text().splitlines()]
        spans[name] = (min(times), max(times))
    assert spans["default"][0] < spans["final"][1] and spans["final"][0] < spans["default"][1], spans
    result = json.loads((out / "search.json").read_text())
    assert set(result["default"]["seeds"]) == set(result["final"]["seeds"]) == {"1"}
    assert (out / "best").resolve() == (out / "final").resolve()
