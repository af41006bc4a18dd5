"""A refusal that comes after the run directory was made (train.device=cuda on a machine without CUDA is
found when training starts) leaves no directory behind: the same command, corrected, runs as it is, with no
--overwrite. A run replaced with --overwrite comes back, and a directory that holds a finished seed stays."""

import pytest
import torch

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.shapes import TINY_MODEL
from warmstart.errors import WarmstartError
from warmstart.train.rundir import unwind

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
FAST = ["train.progress=false", "--max-length", "32", "train.steps=2"]


def test_a_late_refusal_of_a_new_finetune_leaves_nothing(tiny_pretrained, rt_small, tmp_path, capsys):
    out = tmp_path / "ft"
    argv = ["finetune", "--init", tiny_pretrained, "--train-file", rt_small, "--out", out, *FAST]
    code, _, err = run(capsys, *argv, "train.device=cuda")
    assert_one_line_error(code, err, "no CUDA device is available")
    assert not out.exists()
    code, _, err = run(capsys, *argv, "train.device=cpu")  # corrected, as it was: no --overwrite needed
    assert code == 0, err
    kept = sorted(p.name for p in out.iterdir())
    code, _, err = run(capsys, *argv, "train.device=cuda", "--overwrite")  # the replaced run comes back
    assert_one_line_error(code, err, "no CUDA device is available")
    assert sorted(p.name for p in out.iterdir()) == kept and (out / "test_metrics.json").is_file()


def test_unwind_keeps_what_trained_a_resumed_run_and_an_interrupted_one(tmp_path):
    def made(*files):
        path = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        for name in ("config.yaml", "data.json", *files):
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text("x")
        return path

    refused = WarmstartError("train.device=cuda but no CUDA device is available")
    bare = made("seed-2/config.yaml")
    unwind(bare, False, refused)
    assert not bare.exists()  # made by this command, nothing trained: it goes
    for files, resume, error in (
        (["seed-1/test_metrics.json"], False, refused),  # a finished seed: kept to resume
        (["checkpoints/step-00000002/model.safetensors"], False, refused),
        (["metrics.jsonl"], False, refused),  # steps were logged: kept to read
        ([], True, refused),  # --resume: the run was there before this command
        ([], False, KeyboardInterrupt()),  # not a refusal
    ):
        path = made(*files)
        unwind(path, resume, error)
        assert (path / "config.yaml").is_file(), (files, resume, error)


def test_a_late_refusal_of_a_new_pretraining_leaves_nothing(small_shards, tmp_path, capsys):
    out = tmp_path / "pre"
    argv = ["pretrain", "--shards", small_shards, "--out", out, *TINY_MODEL, "train.steps=2"]
    code, _, err = run(capsys, *argv, "train.progress=false", "train.device=cuda")
    assert_one_line_error(code, err, "no CUDA device is available")
    assert not out.exists()
    code, _, err = run(capsys, *argv, "train.progress=false", "train.device=cpu", "train.eval_batches=1")
    assert code == 0, err
