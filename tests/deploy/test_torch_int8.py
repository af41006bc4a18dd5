"""`warmstart export RUN --to torch --quantize int8` (issue 41): torch.ao's dynamic int8 of a finetuned tiny
BERT, saved as safetensors with a marker; predict, evaluate, serve and ``warmstart.load`` take the directory
as they take the run, and its predictions agree with fp32's on most of a labelled set."""

from __future__ import annotations

import csv
import json

import pytest

import warmstart
from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import finetune_run
from warmstart.inference.predict import predict_lines

pytestmark = pytest.mark.integration
PROBABILITY_GAP = 0.05  # measured: largest |p_int8 - p_fp32| on rt_small's 240 rows 0.0009 (tiny BERT)


@pytest.fixture(scope="module")
def finetuned(tiny_pretrained, rt_small, tmp_path_factory):
    return finetune_run(tiny_pretrained, rt_small, tmp_path_factory.mktemp("int8") / "run")


def _predictions(model_dir, rows) -> list[dict]:
    return list(predict_lines(str(model_dir), [json.dumps({"text": r["text"]}) for r in rows]))


def test_int8_torch_predicts_as_fp32_and_the_directory_is_a_model(finetuned, rt_small, tmp_path, capsys):
    out = tmp_path / "int8"
    code, said, err = run(capsys, "export", finetuned, "--to", "torch", "--quantize", "int8", "--out", out)
    assert code == 0 and "torch, int8" in said, err
    assert json.loads((out / "config.json").read_text())["quantized"]["precision"] == "int8"
    assert (out / ".warmstart").is_file() and not (out / "model.safetensors").exists()
    rows = list(csv.DictReader(rt_small.open(encoding="utf-8")))
    got, want = _predictions(out, rows), _predictions(finetuned, rows)
    agree = sum(g["label"] == w["label"] for g, w in zip(got, want, strict=True)) / len(rows)
    gap = max(
        abs(g["probabilities"][k] - w["probabilities"][k])
        for g, w in zip(got, want)
        for k in w["probabilities"]
    )
    assert agree >= 0.95 and gap < PROBABILITY_GAP, (agree, gap)
    assert gap > 0  # the int8 weights are used, not the fp32 ones
    model = warmstart.load(out)
    assert model.predict(rows[0]["text"])["label"] == got[0]["label"]
    with pytest.raises(warmstart.WarmstartError, match="int8 export of a classification model"):
        model.encode("a text")
    code, said, err = run(capsys, "evaluate", out, "--test-file", rt_small)
    assert code == 0 and "accuracy" in said + err, err


def test_serve_answers_from_the_int8_model(finetuned, tmp_path):
    from fastapi.testclient import TestClient

    from warmstart.deploy.torch_int8 import export_torch_int8
    from warmstart.serve.app import create_app
    from warmstart.serve.limits import Limits
    from warmstart.serve.load import open_model

    out, measured = export_torch_int8(finetuned, tmp_path / "int8")
    assert 0 < measured["max_abs_difference"] < 0.5
    client = TestClient(create_app(open_model(str(out)), Limits()))
    answer = client.post("/api/predict", json={"text": "A warm, funny film."}).json()
    assert answer["label"] == _predictions(out, [{"text": "A warm, funny film."}])[0]["label"], answer


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--to", "torch"], "--to torch writes int8 weights"),
        (
            ["--to", "torch", "--quantize", "int8", "--optimize"],
            "--optimize and --calibrate go with --to onnx",
        ),
        (["--to", "onnx", "--calibrate", "8"], "needs --quantize int8"),
    ],
)
def test_bad_flags_are_one_line(finetuned, tmp_path, capsys, flags, needle):
    pytest.importorskip("onnxruntime")
    code, _, err = run(capsys, "export", finetuned, *flags, "--out", tmp_path / "x")
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "x").exists()
