"""`warmstart export --to onnx` of a sentence encoder (issue 41): the real all-MiniLM-L6-v2 (mean pooling and
unit length in the graph) and a tiny pretrained BERT ([CLS] as is) export to graphs whose vectors through
``warmstart.load(DIR).encode`` and `warmstart embed` equal PyTorch's within 1e-4 at any batch and length;
int8 stays close (cosine bound measured); what the graph cannot do is one line."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import warmstart
from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.models import minilm_dir
from warmstart.deploy.onnx_export import export_onnx
from warmstart.hub.convert import import_hf

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.integration
TEXTS = [
    "A man is eating food.",
    "The new movie is awesome, if a little long.",
    "Paris is the capital of France; its museums draw millions of visitors every year, most in summer.",
    "short",
    "Slow and dull for most of two hours.",
]
INT8_COSINE = 0.98  # measured: all-MiniLM-L6-v2 int8 (dynamic, per channel) against fp32: lowest 0.988


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    return import_hf(minilm_dir(), tmp_path_factory.mktemp("minilm") / "m")


def test_minilm_exports_with_its_pooling_and_encodes_as_pytorch(minilm, tmp_path, capsys):
    out, measured = export_onnx(minilm, tmp_path / "onnx")
    assert measured["max_abs_difference"] < 1e-4
    model, torch_model = warmstart.load(out), warmstart.load(minilm)
    assert model.task == "encoder" and model.config["onnx"]["sentence"]["pooling"] == "mean"
    want = torch_model.encode(TEXTS)
    for batch_size in (1, 2, 64):  # dynamic batch and length: padding differs with each
        got = model.encode(TEXTS, batch_size=batch_size)
        assert got.shape == (5, 384) and np.abs(got - want).max() < 1e-4
    assert np.allclose(np.linalg.norm(model.encode(TEXTS), axis=1), 1, atol=1e-5)  # normalized in the graph
    data = tmp_path / "texts.csv"
    with open(data, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["text"], *([t] for t in TEXTS)])
    code, said, err = run(capsys, "embed", out, "--data", data, "--out", tmp_path / "v.npy")
    assert code == 0 and "(last, mean, unit length)" in said, err
    assert np.abs(np.load(tmp_path / "v.npy") - want).max() < 1e-4
    code, _, err = run(capsys, "embed", out, "--data", data, "--pooling", "cls", "--out", tmp_path / "c.npy")
    assert_one_line_error(code, err, "mean pooling, unit length in its graph", "not pooling cls")
    with pytest.raises(warmstart.WarmstartError, match="cannot predict"):
        model.predict("a text")
    code, _, err = run(capsys, "fill-mask", out, "Paris is the [MASK] of France.")
    assert_one_line_error(code, err, "gives sentence vectors only")


def test_minilm_int8_is_smaller_and_close(minilm, tmp_path, capsys):
    argv = ["export", minilm_dir(), "--to", "onnx", "--quantize", "int8", "--out", tmp_path / "q"]
    code, said, err = run(capsys, *argv)  # a transformers directory as downloaded: imported on the fly
    assert code == 0 and "ONNX, int8" in said, err
    fp32, _ = export_onnx(minilm, tmp_path / "f")
    assert (tmp_path / "q" / "model.onnx").stat().st_size < (fp32 / "model.onnx").stat().st_size / 2
    got, want = warmstart.load(tmp_path / "q").encode(TEXTS), warmstart.load(fp32).encode(TEXTS)
    cosine = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cosine.min() > INT8_COSINE, cosine


def test_a_pretrained_run_exports_its_cls_state(tiny_pretrained, tmp_path):
    out, measured = export_onnx(tiny_pretrained, tmp_path / "onnx")
    assert measured["max_abs_difference"] < 1e-4
    options = warmstart.load(out).config["onnx"]["sentence"]
    assert options["pooling"] == "cls" and options["normalize"] is False
    got, want = warmstart.load(out).encode(TEXTS), warmstart.load(tiny_pretrained).encode(TEXTS)
    assert np.abs(got - want).max() < 1e-4
    unit = warmstart.load(out).encode(TEXTS, normalize_embeddings=True)  # unit length added outside
    assert np.allclose(np.linalg.norm(unit, axis=1), 1, atol=1e-5)
    with pytest.raises(warmstart.WarmstartError, match="drop --calibrate"):
        export_onnx(tiny_pretrained, tmp_path / "c", quantize="int8", calibrate=8)


def test_minilm_optimized_runs_onnxruntimes_fused_attention(minilm, tmp_path):
    """--optimize: MiniLM's 6 attention layers (12 heads) as onnxruntime's Attention node (QAttention in
    int8), the vectors as PyTorch's, for every padding a batch size makes."""
    import onnx

    out, measured = export_onnx(minilm, tmp_path / "opt", optimize=True)
    assert measured["max_abs_difference"] < 1e-4
    ops = [n.op_type for n in onnx.load(out / "model.onnx").graph.node]
    assert ops.count("Attention") == 6 and "Softmax" not in ops
    want = warmstart.load(minilm).encode(TEXTS)
    for batch_size in (1, 2, 64):
        assert np.abs(warmstart.load(out).encode(TEXTS, batch_size=batch_size) - want).max() < 1e-4
    q, _ = export_onnx(minilm, tmp_path / "q", quantize="int8", optimize=True)
    assert [n.op_type for n in onnx.load(q / "model.onnx").graph.node].count("QAttention") == 6
    got = warmstart.load(q).encode(TEXTS)
    cosine = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cosine.min() > INT8_COSINE, cosine
