"""`export --to onnx --quantize int8 --calibrate N` (issue 41): static int8, the activations calibrated on the
run's first N training rows (read from its config.yaml, as finetune read them); the graph holds quantize
nodes, its predictions stay close to fp32's; a model directory with no run beside it is one line."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import finetune_run
from warmstart.inference.predict import predict_lines

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.integration
PROBABILITY_GAP = 0.05  # measured: largest |p_static - p_fp32| on rt_small's 240 rows 0.0009 (tiny BERT)


@pytest.fixture(scope="module")
def finetuned(tiny_pretrained, rt_small, tmp_path_factory):
    return finetune_run(tiny_pretrained, rt_small, tmp_path_factory.mktemp("calibrate") / "run")


def _probabilities(model_dir, rows) -> list[dict]:
    lines = [json.dumps({"text": r["text"]}) for r in rows]
    return [p["probabilities"] for p in predict_lines(str(model_dir), lines)]


@pytest.mark.parametrize("optimize", [[], ["--optimize"]], ids=["plain", "optimize"])
def test_static_int8_is_calibrated_on_the_training_rows(optimize, finetuned, rt_small, tmp_path, capsys):
    static, fp32 = tmp_path / "static", tmp_path / "fp32"
    argv = ["export", finetuned, "--to", "onnx", "--quantize", "int8", "--calibrate", 32, "--out", static]
    code, said, err = run(capsys, *argv, *optimize)
    assert code == 0 and "ONNX, int8 static" in said, err
    assert "WARNING" not in err  # onnxruntime's quantizer logs are not the user's
    said = json.loads((static / "config.json").read_text())["onnx"]
    assert said["calibrated"] == 32 and said["optimized"] == bool(optimize)
    ops = {node.op_type for node in onnx.load(str(static / "model.onnx")).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops  # activations quantized with calibrated ranges
    assert run(capsys, "export", finetuned, "--to", "onnx", "--out", fp32)[0] == 0
    rows = list(csv.DictReader(rt_small.open(encoding="utf-8")))
    got, want = _probabilities(static, rows), _probabilities(fp32, rows)
    gap = max(abs(g[k] - w[k]) for g, w in zip(got, want, strict=True) for k in w)
    assert 0 < gap < PROBABILITY_GAP, gap


def test_calibration_needs_the_run(finetuned, tmp_path, capsys):
    alone = tmp_path / "alone"
    shutil.copytree(finetuned / "best", alone)  # a model directory with no config.yaml beside it
    argv = ["export", alone, "--to", "onnx", "--quantize", "int8", "--calibrate", 8, "--out", tmp_path / "x"]
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, "has no run config.yaml", "drop --calibrate")
    assert not (tmp_path / "x").exists()
