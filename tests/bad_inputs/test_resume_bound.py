"""A resume is the same run (issue 22): flags that change the run are refused with a line naming them, the
run's data is fingerprinted and checked, and a run directory is locked while a process trains in it. Each
refusal leaves every file byte-identical."""

import csv
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.runs import Interrupt, run_args, stop_at
from warmstart.commands.finetune import finetune
from warmstart.commands.pretrain import pretrain

pytestmark = pytest.mark.integration


def snapshot(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def data_copy(labeled_csv, tmp_path):
    path = tmp_path / "data.csv"
    shutil.copy(labeled_csv, path)
    return path


@pytest.fixture
def cut_finetune(tiny_pretrained, data_copy, tmp_path):
    """A finetune interrupted after its checkpoint at step 2: tmp_path/ft."""
    out = tmp_path / "ft"
    flags = {"init": str(tiny_pretrained), "data": {"dataset": str(data_copy)}, "epochs": 2, "out": str(out)}
    overrides = ["train.batch_size=16", "task.max_length=32", "train.save_every=2", "train.progress=false"]
    with pytest.raises(Interrupt):
        finetune(None, flags, overrides, hooks=[stop_at(3)])
    assert (out / "checkpoints").is_dir() and (out / "data.json").is_file()
    return out


def test_resume_with_another_dataset_is_refused(cut_finetune, labeled_csv, tmp_path, capsys):
    other = tmp_path / "other.csv"
    with open(other, "w", newline="") as fh:
        csv.writer(fh).writerows([["text", "label"]] + [[f"text {i}", "xyz"[i % 3]] for i in range(30)])
    before = snapshot(tmp_path)
    code, _, err = run(capsys, "finetune", "--resume", cut_finetune, "--dataset", other)
    assert_one_line_error(code, err, "cannot resume", "data.dataset (was", "other.csv")
    assert snapshot(tmp_path) == before


def test_resume_on_data_changed_in_place_is_refused(cut_finetune, data_copy, tmp_path, capsys):
    with open(data_copy, "a", newline="") as fh:  # the same file name, one more labeled row
        csv.writer(fh).writerow(["one more review of the film", "a"])
    before = snapshot(tmp_path)
    code, _, err = run(capsys, "finetune", "--resume", cut_finetune)
    assert_one_line_error(code, err, "its data changed since the run started (split ", "records")
    assert snapshot(tmp_path) == before


def test_harmless_and_recovery_settings_apply_and_are_said(cut_finetune, capsys):
    code, _, err = run(capsys, "finetune", "--resume", cut_finetune, "train.progress=true", "train.lr=1e-5")
    assert code == 0, err
    assert "resume: train.progress=True (does not change the run)" in err
    assert "resume: train.lr=1e-05 (recovery setting" in err
    saved = yaml.safe_load((cut_finetune / "config.yaml").read_text())
    assert saved["train"]["lr"] == 1e-5  # a later resume keeps it


def test_pretrain_resume_with_more_steps_is_refused(small_shards, tmp_path, capsys):
    out = tmp_path / "cut"
    with pytest.raises(Interrupt):
        pretrain(**run_args(small_shards, out), hooks=[stop_at(6)])
    before = snapshot(tmp_path)
    code, _, err = run(capsys, "pretrain", "--resume", out, "--steps", "40", "model.hidden_size=64")
    assert_one_line_error(code, err, "model.hidden_size (was 32, now 64)", "train.steps (was 16, now 40)")
    assert snapshot(tmp_path) == before


def test_pretrain_resume_on_changed_shards_is_refused(small_shards, tmp_path, capsys):
    shards = tmp_path / "shards"
    shutil.copytree(small_shards, shards)
    out = tmp_path / "cut"
    with pytest.raises(Interrupt):
        pretrain(**run_args(shards, out), hooks=[stop_at(6)])
    first = sorted(shards.glob("train-*.bin"))[0]
    data = bytearray(first.read_bytes())
    data[100], data[101] = data[101], data[100] + 1 & 0xFF  # same size, other tokens
    first.write_bytes(bytes(data))
    before = snapshot(tmp_path)
    code, _, err = run(capsys, "pretrain", "--resume", out)
    assert_one_line_error(code, err, "data changed since the run started (file ", first.name, "bytes, sha256")
    assert snapshot(tmp_path) == before


HOLD = """
import fcntl, sys, time
fh = open(sys.argv[1], "rb")
fcntl.flock(fh, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_a_run_in_use_by_another_process_is_refused(cut_finetune, small_shards, tmp_path, capsys):
    """Another process (a real one) holds the run's lock, as a training process does: a second resume and
    an --overwrite of that run are both refused, and nothing changes."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(cut_finetune / "config.yaml")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = snapshot(tmp_path)
        code, _, err = run(capsys, "finetune", "--resume", cut_finetune)
        assert_one_line_error(code, err, "is in use: another warmstart process is training in it")
        argv = ["pretrain", "--shards", small_shards, "--out", cut_finetune, "--overwrite", "--steps", "2"]
        code, _, err = run(capsys, *argv, "train.progress=false")
        assert_one_line_error(code, err, "is in use")
        assert snapshot(tmp_path) == before
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    code, _, err = run(capsys, "finetune", "--resume", cut_finetune, "train.progress=false")
    assert code == 0, err  # the lock went with the process that held it
