"""`warmstart probe --checkpoints RUN`: every saved checkpoint of a pretraining run probed, the score set
against the step and the validation loss at that step."""

import json
import shutil

from tests.helpers.cli import assert_one_line_error, run
from warmstart.commands.probe_steps import validation_losses


def test_every_checkpoint_is_probed_with_its_validation_loss(tiny_pretrained, rt_small, tmp_path, capsys):
    steps = sorted(p.name for p in (tiny_pretrained / "checkpoints").iterdir())
    assert len(steps) >= 2, steps  # the fixture keeps step 6 and step 12
    out = tmp_path / "steps"
    code, stdout, _ = run(capsys, "probe", "--checkpoints", tiny_pretrained, "--data", rt_small, "--out", out,
                          "--train-limit", 60)  # fmt: skip
    assert code == 0
    rows = json.loads((out / "probe.json").read_text())["checkpoints"]
    assert [r["step"] for r in rows] == [0, 6, 12]
    assert rows[0]["checkpoint"] == "random init"
    losses = validation_losses(tiny_pretrained)
    for r in rows:
        assert r["validation_loss"] == losses[r["step"]]
        assert 0.0 <= r["test"] <= 1.0 and 0.0 <= r["last_layer_test"] <= 1.0
    assert losses[6] != losses[12]  # each step's own loss, not one repeated
    assert "| 12 | step-" in stdout and "validation loss" in stdout
    assert (out / "probe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_without_step_checkpoints_probes_final(tiny_pretrained, rt_small, tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_pretrained, run_dir, ignore=shutil.ignore_patterns("checkpoints"))
    out = tmp_path / "steps"
    code, _, _ = run(capsys, "probe", "--checkpoints", run_dir, "--data", rt_small, "--out", out,
                     "--train-limit", 60, "--no-scratch")  # fmt: skip
    assert code == 0
    rows = json.loads((out / "probe.json").read_text())["checkpoints"]
    assert [(r["step"], r["checkpoint"]) for r in rows] == [(12, "final")]


def test_a_checkpoint_directory_is_refused_in_one_line(tiny_pretrained, rt_small, tmp_path, capsys):
    code, _, err = run(capsys, "probe", "--checkpoints", tiny_pretrained / "final", "--data", rt_small,
                       "--out", tmp_path / "steps")  # fmt: skip
    assert_one_line_error(code, err, "pretraining run directory", "warmstart pretrain")
    assert not (tmp_path / "steps").exists()
