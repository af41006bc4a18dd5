"""`warmstart search` end to end on the tiny pretrained BERT and 240 rotten-tomatoes snippets: a grid search
with its seeded re-runs, link and report; pruning that stops a trial; a resume after kill -9 that reaches
the trials asked for with none run twice; two processes sharing one study through its SQLite file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.study import search_storage

FAST = ["task.max_length=32", "train.batch_size=16", "eval_batch_size=256", "evals_per_epoch=2"]
GRID = "train.lr: [1.0e-3, 3.0e-4, 1.0e-4]\n"


def _space(tmp_path: Path, text: str = GRID) -> Path:
    f = tmp_path / "space.yaml"
    f.write_text(text)
    return f


def _args(init, data, out, space, *extra) -> list[str]:
    return ["search", "--init", init, "--dataset", data, "--out", out, "--space", space, *extra, *FAST]


def _study(out: Path, storage: str | None = None):
    url = storage or f"sqlite:///{out / 'search.db'}"
    return optuna.load_study(study_name="search", storage=url)


def _states(study) -> list[str]:
    return [t.state.name for t in study.get_trials(deepcopy=False)]


def test_a_grid_search_runs_each_point_once_then_the_best_with_seeds(
    tiny_pretrained, rt_small, tmp_path, capsys
):
    out = tmp_path / "s"
    argv = _args(tiny_pretrained, rt_small, out, _space(tmp_path), "--trials", "5", "--final-seeds", "2")
    code, stdout, err = run(capsys, *argv, "--pruner", "none", "epochs=1")
    assert code == 0, err
    assert "has 3 configurations: 3 trials" in err
    result = json.loads((out / "search.json").read_text())
    trials = result["trials"]
    assert sorted(t["params"]["train.lr"] for t in trials) == [1e-4, 3e-4, 1e-3]
    assert all(t["state"] == "complete" for t in trials)
    best = max(trials, key=lambda t: t["value"])
    assert result["best"]["number"] == best["number"] and result["best"]["params"] == best["params"]
    assert set(result["final"]["seeds"]) == {"1", "2"} and result["final"]["params"] == best["params"]
    assert result["default"]["params"] == {} and len(result["default"]["seeds"]) == 2
    assert (out / "best").is_symlink() and (out / "best" / "best" / "model.safetensors").is_file()
    assert not (out / "trials" / "trial-0000" / "best").exists()  # trial weights are dropped by default
    for name in ("report.html", "report.md", "report_expected_max.png", "report_slices.svg"):
        assert (out / name).is_file(), name
    assert "expected best validation score" in (out / "report.md").read_text()
    assert f"best trial #{best['number']}" in stdout and "default recipe: test accuracy" in stdout
    # the same command again resumes: nothing runs, the same best
    code, _, err = run(capsys, *argv, "--pruner", "none", "epochs=1")
    assert code == 0 and "trial " not in err.replace("trials in", "")
    assert json.loads((out / "search.json").read_text())["best"] == result["best"]


def test_pruning_stops_a_trial_at_its_evaluation(tiny_pretrained, rt_small, tmp_path, capsys, monkeypatch):
    threshold = lambda: optuna.pruners.ThresholdPruner(lower=1.5)  # noqa: E731 - no accuracy reaches it
    monkeypatch.setitem(search_storage.PRUNERS, "median", threshold)
    out = tmp_path / "p"
    argv = _args(tiny_pretrained, rt_small, out, _space(tmp_path, "train.lr: [1.0e-3]\n"), "--trials", "1")
    code, _, err = run(capsys, *argv, "--final-seeds", "0", "--no-report", "epochs=2")
    assert code == 2 and "no trial of" in err  # the only trial was pruned
    trial = _study(out).get_trials()[0]
    # judged first at the end of its first epoch (evaluation 2 of 2 an epoch), not at its first evaluation
    assert trial.state.name == "PRUNED" and list(trial.intermediate_values) == [1, 2]
    rows = [json.loads(x) for x in (out / "trials" / "trial-0000" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["split"] == "validation"] == [0, 6, 12]
    assert max(r["step"] for r in rows) == 12  # two epochs of 12 steps were planned


def _command(init, data, out, space, *extra) -> list[str]:
    return [sys.executable, "-m", "warmstart", *map(str, _args(init, data, out, space, *extra))]


def test_a_search_killed_mid_trial_resumes_to_its_trials_with_none_twice(tiny_pretrained, rt_small, tmp_path):
    out, env = tmp_path / "k", {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    cmd = _command(tiny_pretrained, rt_small, out, _space(tmp_path), "--trials", "3", "--final-seeds", "0",
                   "--no-default", "--no-report", "--pruner", "none", "epochs=2")  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while not (out / "trials" / "trial-0001" / "config.yaml").is_file():
        assert proc.poll() is None and time.time() < deadline, "the search ended before its second trial"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # the second trial dies with its process
    proc.wait()
    assert _states(_study(out)) == ["COMPLETE", "RUNNING"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "trial 1 was killed with its process: it runs again" in done.stderr
    trials = _study(out).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    finished = [t.params["train.lr"] for t in trials if t.state.name == "COMPLETE"]
    assert sorted(finished) == [
        1e-4,
        3e-4,
        1e-3,
    ]  # each grid point once: the killed one again, no other twice
    assert trials[2].user_attrs["retry_of"] == 1 and trials[2].params == trials[1].params


def test_two_processes_share_one_study(tiny_pretrained, rt_small, tmp_path):
    db, env = tmp_path / "shared.db", {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    url = f"sqlite:///{db}"
    space = _space(tmp_path, "train.lr: [1.0e-3, 3.0e-4, 1.0e-4, 3.0e-5]\n")
    procs = [
        subprocess.Popen(
            _command(
                tiny_pretrained,
                rt_small,
                tmp_path / f"w{i}",
                space,
                "--trials",
                "4",
                "--storage",
                url,
                "--final-seeds",
                "0",
                "--no-default",
                "--no-report",
                "--pruner",
                "none",
                "epochs=2",
            ),
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for i in range(2)
    ]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    trials = optuna.load_study(study_name="search", storage=url).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 4
    assert sorted(t.params["train.lr"] for t in trials) == [3e-5, 1e-4, 3e-4, 1e-3]
    pids = {t.user_attrs["pid"] for t in trials}
    assert len(pids) == 2  # both processes ran trials
    dirs = [p for i in range(2) for p in (tmp_path / f"w{i}" / "trials").iterdir()]
    assert sorted(p.name for p in dirs) == [f"trial-{n:04d}" for n in range(4)]


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--space", "nope"], "unknown search space 'nope'"),
        (["--trials", "0"], "--trials must be a whole number of at least 1"),
        (["train.lrr=3"], "unknown config key 'train.lrr'"),
        (["seeds=[1,2]"], "seeds is set by the search"),
    ],
)
def test_bad_search_settings_are_one_line_before_any_work(
    tiny_pretrained, rt_small, tmp_path, capsys, extra, words
):
    out = tmp_path / "bad"
    argv = ["search", "--init", tiny_pretrained, "--dataset", rt_small, "--out", out, *extra]
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, words)
    assert not out.exists()
