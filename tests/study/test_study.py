"""`warmstart study` end to end on real snippets: cells, study.json, resume, a half-done cell, bad input."""

import json
import shutil

import pytest

import warmstart.commands.study
from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.runs import study_args
from warmstart.cli.main import main

pytestmark = pytest.mark.integration

MODELS = ("pretrained", "scratch", "tfidf")


def cells(root):
    return sorted(root.glob("cells/*/*/*/cell.json"))


def test_cells_and_study_json(study_dir):
    found = cells(study_dir)
    assert len(found) == 3 * 2 * 2
    study = json.loads((study_dir / "study.json").read_text())
    assert len(study["cells"]) == 12 and len(study["table"]) == 6
    sizes = {}
    for row in study["table"]:
        mine = [c for c in study["cells"] if c["model"] == row["model"] and c["fraction"] == row["fraction"]]
        values = []
        for seed in (1, 2):
            d = study_dir / "cells" / row["model"] / f"frac-{row['fraction']:g}" / f"seed-{seed}"
            cell = json.loads((d / "cell.json").read_text())
            if row["model"] != "tfidf":  # the finetune run's own numbers
                test = json.loads((d / "run" / "test_metrics.json").read_text())
                assert cell["test"] == test["test"] and test["sizes"]["train"] == row["train_examples"]
                assert cell["validation_curve"] and not (d / "run" / "best").exists()  # weights deleted
            values.append(cell["test"]["accuracy"])
        assert [c["test"]["accuracy"] for c in sorted(mine, key=lambda c: c["seed"])] == values
        acc = row["accuracy"]
        assert acc["values"] == values and acc["min"] == min(values) and acc["max"] == max(values)
        assert acc["median"] == pytest.approx(sum(values) / 2)
        sizes.setdefault(row["fraction"], set()).add(row["train_examples"])
    assert sizes == {0.1: {21}, 1.0: {200}}  # the same subset size for every model; 10% ceil per label


def test_rerun_skips_finished_cells_and_redoes_a_half_written_one(study_dir, tmp_path, monkeypatch, capsys):
    copy = tmp_path / "study"
    shutil.copytree(study_dir, copy)
    before = {p: p.stat().st_mtime_ns for p in cells(copy)}
    half = copy / "cells" / "scratch" / "frac-0.1" / "seed-2"
    (half / "cell.json").unlink()  # as if interrupted after finetuning started
    (half / "run" / "test_metrics.json").unlink()
    calls = []
    real = warmstart.commands.study.finetune

    def counting(*args, **kwargs):
        calls.append(kwargs.get("flags") or args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(warmstart.commands.study, "finetune", counting)  # the study calls it from there
    run_dir = json.loads((study_dir / "study.json").read_text())["config"]["run"]
    assert main(study_args(run_dir, copy)) == 0
    assert len(calls) == 1 and calls[0]["from_scratch"] and calls[0]["data"]["subset_seed"] == 2
    after = {p: p.stat().st_mtime_ns for p in cells(copy)}
    assert len(after) == 12
    assert all(after[p] == t for p, t in before.items() if p.parent != half)
    assert (half / "run" / "test_metrics.json").is_file()
    assert "study: 12/12 cells" in capsys.readouterr().err


def snapshot(root):
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("change", [("--seeds", "2,3"), ("--epochs", "2")])  # a seed dropped; another run
def test_another_config_on_a_study_dir_is_refused(study_dir, capsys, change):
    before = snapshot(study_dir)
    run_dir = json.loads((study_dir / "study.json").read_text())["config"]["run"]
    args = study_args(run_dir, study_dir)
    flag, value = change
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    code, _, err = run(capsys, *args)
    assert_one_line_error(code, err, "another config", flag.strip("-"), "--overwrite")
    assert snapshot(study_dir) == before


def test_more_seeds_extend_a_finished_study(study_dir, tmp_path, monkeypatch, capsys):
    """A third seed adds its cells; the finished ones are kept as they are, not run again."""
    copy = tmp_path / "study"
    shutil.copytree(study_dir, copy)
    before = {p: p.stat().st_mtime_ns for p in cells(copy)}
    calls = []
    real = warmstart.commands.study.finetune

    def counting(*args, **kwargs):
        calls.append(kwargs.get("flags") or args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(warmstart.commands.study, "finetune", counting)
    run_dir = json.loads((study_dir / "study.json").read_text())["config"]["run"]
    args = study_args(run_dir, copy)
    args[args.index("--seeds") + 1] = "1,2,3"
    assert main(args) == 0
    assert sorted(c["data"]["subset_seed"] for c in calls) == [3, 3, 3, 3]  # 2 models x 2 fractions
    after = {p: p.stat().st_mtime_ns for p in cells(copy)}
    assert len(after) == 18 and all(after[p] == t for p, t in before.items())
    study = json.loads((copy / "study.json").read_text())
    assert all(len(row["accuracy"]["values"]) == 3 for row in study["table"])
    assert "extending" in capsys.readouterr().err


@pytest.mark.parametrize(
    "change, needles",
    [
        (("run", "nope"), ("no such run",)),
        (("--data", "wiki-leads"), ("has no labels",)),
        (("--data", "news-headlines"), ("classification and tagging only",)),
        (("--fractions", "0,1"), ("(0, 1]",)),
        (("--fractions", "0.5,1.5"), ("(0, 1]",)),
        (("--fractions", "ten"), ("cannot read fractions",)),
        (("extra", "task.name=tagging"), ("sets task.name itself",)),
        (("extra", "data.train_fraction=0.5"), ("--fractions",)),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tiny_pretrained, tmp_path, capsys, change, needles):
    out = tmp_path / "s"
    args = study_args(tiny_pretrained, out)
    key, value = change
    if key == "run":
        args[1] = str(tmp_path / value)
    elif key == "extra":
        args.append(value)
    else:
        args[args.index(key) + 1] = value
    code, _, err = run(capsys, *args)
    assert_one_line_error(code, err, *needles)
    assert not out.exists()


def test_a_replacing_study_that_fails_before_a_cell_finishes_puts_the_old_one_back(
    study_dir, tmp_path, monkeypatch, capsys
):
    """--overwrite moves the old study aside; it is removed once a new cell has finished, and put back
    when the new study dies before that (it was removed at once)."""
    copy = tmp_path / "study"
    shutil.copytree(study_dir, copy)
    before = snapshot(copy)

    def dies(*args, **kwargs):
        raise RuntimeError("injected: the first cell failed")

    monkeypatch.setattr(warmstart.commands.study, "run_baseline_cell", dies)
    run_dir = json.loads((study_dir / "study.json").read_text())["config"]["run"]
    code, _, err = run(capsys, *study_args(run_dir, copy, "--overwrite"))
    assert code == 1 and "injected" in err
    assert snapshot(copy) == before
    assert not [p for p in tmp_path.iterdir() if ".replaced-" in p.name]
