"""A search extended by a larger --trials scores its new best on the test split (issue 42): the seeded runs of
the best so far are read back only when the best is still the same configuration; an earlier best's runs are
kept aside, never overwritten."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import run

pytestmark = pytest.mark.integration

FAST = ["task.max_length=32", "train.batch_size=16", "eval_batch_size=256", "evals_per_epoch=1", "epochs=1"]


def test_a_new_best_gets_its_own_seeded_runs_and_the_old_ones_are_kept(
    tiny_pretrained, rt_small, tmp_path, capsys
):
    space = tmp_path / "space.yaml"
    space.write_text("train.lr: [1.0e-3, 1.0e-4]\n")
    out = tmp_path / "s"
    argv = ["search", "--init", tiny_pretrained, "--dataset", rt_small, "--out", out, "--space", space,
            "--final-seeds", "1", "--no-default", "--no-report", "--pruner", "none", *FAST]  # fmt: skip
    code, _, err = run(capsys, *argv, "--trials", "1")
    assert code == 0, err
    record = out / "final" / "search_run.json"
    first = json.loads(record.read_text())
    assert (
        first["trial"] == 0
        and first["params"] == json.loads((out / "search.json").read_text())["best"]["params"]
    )
    before = record.stat().st_mtime_ns
    code, _, err = run(capsys, *argv, "--trials", "1")  # the same best: read back, not run again
    assert code == 0, err
    assert record.stat().st_mtime_ns == before
    # as if an earlier search had found another best: its seeded runs must not stand for this best
    record.write_text(json.dumps({**first, "params": {"train.lr": 0.5}, "trial": 7}))
    code, _, err = run(capsys, *argv, "--trials", "2")
    assert code == 0, err
    result = json.loads((out / "search.json").read_text())
    assert result["final"]["params"] == result["best"]["params"]
    assert result["final"]["trial"] == result["best"]["number"]
    kept = out / "final-trial-0007"
    assert json.loads((kept / "search_run.json").read_text())["params"] == {"train.lr": 0.5}
    assert "experimental" not in err and "Heartbeat" not in err  # Optuna's notes to itself are not shown
    assert "kept in" in err and (out / "best").resolve().is_relative_to((out / "final").resolve())
