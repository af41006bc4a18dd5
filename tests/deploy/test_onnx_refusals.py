"""What `warmstart export --to onnx` and `--to torch --quantize int8` do not export is one line, exit 2, and
nothing written (issue 41): a pretrained generator (GPT-2) has no graph of scores to export."""

from __future__ import annotations

import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.runs import pretrain_family

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gpt2_run(bpe_shards, tmp_path_factory):
    """A tiny GPT-2 pretrained for 4 steps."""
    out = tmp_path_factory.mktemp("onnx-refusals") / "gpt2"
    pretrain_family("gpt2", bpe_shards, out, steps=4)
    return out


@pytest.mark.parametrize(
    "flags",
    [["--to", "onnx"], ["--to", "onnx", "--quantize", "int8"], ["--to", "torch", "--quantize", "int8"]],
    ids=["onnx", "onnx-int8", "torch-int8"],
)
def test_a_generator_is_refused_in_one_line_and_nothing_is_written(gpt2_run, flags, tmp_path, capsys):
    before = sorted(p.name for p in gpt2_run.iterdir())
    code, out, err = run(capsys, "export", gpt2_run, *flags, "--out", tmp_path / "x")
    assert_one_line_error(code, err, "gpt2")
    assert "--to hf" in err or "finetune" in err, err
    assert not (tmp_path / "x").exists()
    assert sorted(p.name for p in gpt2_run.iterdir()) == before


def test_calibrate_on_a_pretrained_run_is_refused(tiny_pretrained, tmp_path, capsys):
    argv = ["export", tiny_pretrained, "--to", "onnx", "--quantize", "int8", "--calibrate", "8"]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "y")
    assert_one_line_error(code, err, "--calibrate")
    assert not (tmp_path / "y").exists()
