"""`--resume` from another working directory (issue 38): a run's config.yaml records the relative paths it was
given (data, init, shards), which failed to resolve from anywhere else. The run now records the directory it
started in (``workdir`` in config.yaml) and a resume reads a relative path from there when it is not found
from here, saying so in one line; resumed where it started, nothing more is said."""

import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers.shapes import TINY_MODEL
from warmstart.cli.main import main

pytestmark = pytest.mark.integration

FINETUNE = ["train.steps=4", "train.eval_every=2", "train.save_every=2", "train.keep_last=2",
            "train.batch_size=16", "task.max_length=32", "train.progress=false"]  # fmt: skip
PRETRAIN = TINY_MODEL + ["train.steps=4", "train.eval_every=2", "train.save_every=2", "train.keep_last=2",
                         "train.batch_size=8", "train.eval_batches=1", "train.progress=false"]  # fmt: skip


def cut_short(run: Path) -> None:
    """Make ``run`` a run stopped at step 2: its last checkpoint, final model and test metrics removed."""
    steps = sorted((run / "checkpoints").glob("step-*"))
    assert len(steps) == 2, steps
    shutil.rmtree(steps[-1])
    shutil.rmtree(run / "final")
    (run / "test_metrics.json").unlink(missing_ok=True)


def resume_from(where: Path, command: str, run: Path, capsys) -> tuple[int, str]:
    os.chdir(where)
    code = main([command, "--resume", str(run)])
    return code, capsys.readouterr().err


@pytest.fixture
def started(tmp_path, monkeypatch) -> Path:
    """The directory a run starts in; the test then moves elsewhere (monkeypatch puts the cwd back)."""
    home = tmp_path / "project"
    home.mkdir()
    monkeypatch.chdir(home)
    return home


def test_finetune_resumed_elsewhere_reads_its_relative_paths_from_where_it_started(
    started, tiny_pretrained, rt_small, tmp_path, capsys
):
    shutil.copytree(tiny_pretrained, started / "pre")
    shutil.copy(rt_small, started / "reviews.csv")
    code = main(["finetune", "--init", "pre", "--data", "reviews.csv", "--out", "run", *FINETUNE])
    assert code == 0, capsys.readouterr().err
    run = started / "run"
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["workdir"] == str(started) and saved["init"] == "pre"
    cut_short(run)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, err = resume_from(elsewhere, "finetune", run, capsys)
    assert code == 0, err
    assert f"resume: init, data.dataset read from {started}, where the run started" in err
    assert (run / "final" / "model.safetensors").is_file() and (run / "test_metrics.json").is_file()
    assert yaml.safe_load((run / "config.yaml").read_text()) == saved  # config.yaml as it was


def test_finetune_resumed_where_it_started_says_nothing_more(started, tiny_pretrained, rt_small, capsys):
    shutil.copytree(tiny_pretrained, started / "pre")
    shutil.copy(rt_small, started / "reviews.csv")
    assert main(["finetune", "--init", "pre", "--data", "reviews.csv", "--out", "run", *FINETUNE]) == 0
    cut_short(started / "run")
    capsys.readouterr()
    code, err = resume_from(started, "finetune", Path("run"), capsys)
    assert code == 0, err
    assert "resume:" not in err and "read from" not in err


def test_pretrain_resumed_elsewhere_reads_its_shards_from_where_it_started(
    started, small_shards, tmp_path, capsys
):
    shutil.copytree(small_shards, started / "shards")
    code = main(["pretrain", "--shards", "shards", "--out", "run", *PRETRAIN])
    assert code == 0, capsys.readouterr().err
    run = started / "run"
    cut_short(run)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, err = resume_from(elsewhere, "pretrain", run, capsys)
    assert code == 0, err
    assert f"resume: data.shards read from {started}, where the run started" in err
    assert (run / "final" / "model.safetensors").is_file()


def test_a_run_config_passed_as_config_starts_a_new_run(started, tiny_pretrained, rt_small, capsys):
    """config.yaml's workdir is a record, not a setting: the file works as --config of a new run."""
    shutil.copytree(tiny_pretrained, started / "pre")
    shutil.copy(rt_small, started / "reviews.csv")
    assert main(["finetune", "--init", "pre", "--data", "reviews.csv", "--out", "run", *FINETUNE]) == 0
    code = main(["finetune", "--config", "run/config.yaml", "--out", "again"])
    assert code == 0, capsys.readouterr().err
    assert (started / "again" / "final").is_dir()
