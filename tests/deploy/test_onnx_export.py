"""`warmstart export --to onnx` (issue 41, first part): every task head of a tiny finetuned BERT exports to an
ONNX graph whose predictions through `warmstart predict` equal the PyTorch run's (fp32: probabilities within
1e-4); int8 is smaller and stays close; the directory is a model for predict, evaluate and
``warmstart.load``; what it cannot do is one line."""

from __future__ import annotations

import csv
import json

import pytest

import warmstart
from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.data import choice_records
from tests.helpers.hub import conll, finetune_run, sentence_pairs, write_csv
from warmstart.data.catalog import open_dataset
from warmstart.deploy.onnx_export import export_onnx
from warmstart.inference.predict import predict_lines

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.integration
TOL = 1e-4


@pytest.fixture(scope="module")
def data(rt_small, wiki_extracts, tmp_path_factory):
    d = tmp_path_factory.mktemp("onnx-data")
    rows = list(csv.DictReader(rt_small.open(encoding="utf-8")))
    multi = [
        {"text": r["text"], "label": "|".join([r["label"]] + ["long"] * (len(r["text"]) > 120))} for r in rows
    ]
    score = [{"text": r["text"], "label": f"{len(r['text'].split()) / 10:.1f}"} for r in rows]
    choices = choice_records(wiki_extracts, 48)
    (d / "mc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in choices[:40]), encoding="utf-8")
    texts = [{"text": r["text"]} for r in rows[-12:]]
    pairs = sentence_pairs(wiki_extracts)
    pair_inputs = [{"text": p["text"], "text_pair": p["text_pair"]} for p in pairs[-8:]]
    qa = [
        {"question": r["question"], "context": r["context"]}
        for r in list(open_dataset("wiki-qa").records("test"))[:5]
    ]
    return {
        "runs": {  # name -> (dataset, overrides, inputs to predict)
            "single": (rt_small, [], texts),
            "pairs": (write_csv(d / "pairs.csv", pairs), ["data.text_pair_column=text_pair"], pair_inputs),
            "multi": (write_csv(d / "multi.csv", multi), ["task.problem=multi_label"], texts),
            "regression": (write_csv(d / "score.csv", score), ["task.problem=regression"], texts),
            "tagging": (conll(d / "tags.conll", wiki_extracts), ["task.name=tagging"],
                        [{"tokens": t.split(". ")[0].split()[:20]} for t in wiki_extracts[2000:2006]]),
            "qa": ("wiki-qa", ["task.name=extractive_qa", "task.max_length=64", "task.doc_stride=32",
                               "data.validation_limit=16", "data.test_limit=16"], qa),
            "choice": (d / "mc.jsonl", ["task.name=multiple_choice"],
                       [{"context": r["text"], "choices": r["choices"]} for r in choices[40:46]]),
        },
    }  # fmt: skip


@pytest.fixture(scope="module")
def runs(tiny_pretrained, data, tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx-runs")
    return {
        name: finetune_run(tiny_pretrained, src, root / name, *extra)
        for name, (src, extra, _) in data["runs"].items()
    }


def _predictions(model_dir, inputs) -> list[dict]:
    return list(predict_lines(str(model_dir), [json.dumps(r) for r in inputs]))


def _gap(a, b) -> float:
    """The largest difference between two predictions' numbers (their other fields must be equal)."""
    if isinstance(a, dict):
        assert set(a) == set(b), (a, b)
        return max((_gap(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list):
        assert len(a) == len(b), (a, b)
        return max((_gap(x, y) for x, y in zip(a, b)), default=0.0)
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b)
    assert a == b, (a, b)
    return 0.0


def _attention_nodes(graph) -> int:
    import onnx

    return sum(n.op_type == "Attention" and n.domain == "com.microsoft" for n in onnx.load(graph).graph.node)


HEADS = ["single", "pairs", "multi", "regression", "tagging", "qa", "choice"]
# --optimize: each kind of input the graph takes (a text, word tags, QA's context mask, 3-D choices)
OPTIMIZED = ["single", "tagging", "qa", "choice"]


@pytest.mark.parametrize(
    "name, optimize", [(h, False) for h in HEADS] + [(h, True) for h in OPTIMIZED], ids=lambda v: str(v)
)
def test_every_head_exports_to_onnx_and_predicts_as_pytorch(name, optimize, runs, data, tmp_path):
    out, measured = export_onnx(runs[name], tmp_path / "onnx", optimize=optimize)
    assert measured["max_abs_difference"] < TOL
    config = json.loads((out / "config.json").read_text())
    assert (
        config["onnx"]["precision"] == "fp32"
        and (out / "tokenizer.json").is_file()
        and (out / ".warmstart").is_file()
    )
    # --optimize: every attention layer of the tiny BERT is onnxruntime's one fused node; plain: none is
    layers = json.loads((runs[name] / "best" / "config.json").read_text())["num_hidden_layers"]
    fused = config["onnx"]["fused_attention_layers"]
    assert fused == _attention_nodes(out / "model.onnx") == (layers if optimize else 0)
    inputs = data["runs"][name][2]
    mine, theirs = _predictions(out, inputs), _predictions(runs[name], inputs)
    assert _gap(mine, theirs) < TOL


def test_int8_is_smaller_and_close_and_the_directory_is_a_model(runs, data, rt_small, tmp_path, capsys):
    fp32, int8 = tmp_path / "fp32", tmp_path / "int8"
    assert run(capsys, "export", runs["single"], "--to", "onnx", "--out", fp32)[0] == 0
    code, out, err = run(
        capsys, "export", runs["single"], "--to", "onnx", "--quantize", "int8", "--optimize", "--out", int8
    )
    assert code == 0 and "ONNX, int8" in out, err
    assert json.loads((int8 / "config.json").read_text())["onnx"]["precision"] == "int8"
    assert (int8 / "model.onnx").stat().st_size < (fp32 / "model.onnx").stat().st_size
    texts = data["runs"]["single"][2]
    got, want = _predictions(int8, texts), _predictions(fp32, texts)
    assert (
        max(
            abs(g["probabilities"][k] - w["probabilities"][k])
            for g, w in zip(got, want)
            for k in w["probabilities"]
        )
        < 0.05
    )
    model = warmstart.load(int8)
    assert model.predict(texts[0]["text"])["label"] in ("fresh", "rotten")
    with pytest.raises(warmstart.WarmstartError, match="ONNX export of a classification model"):
        model.encode("a text")
    code, out, err = run(capsys, "evaluate", fp32, "--test-file", rt_small)
    assert code == 0 and "accuracy" in out + err, err
    code, _, err = run(capsys, "export", runs["single"], "--quantize", "int8", "--out", tmp_path / "x")
    assert_one_line_error(code, err, "--quantize goes with --to onnx or --to torch")
    assert not (tmp_path / "x").exists()


def test_serve_answers_from_the_onnx_graph(runs, data, tmp_path):
    from fastapi.testclient import TestClient

    from warmstart.serve.app import create_app
    from warmstart.serve.limits import Limits
    from warmstart.serve.load import open_model

    out, _ = export_onnx(runs["tagging"], tmp_path / "onnx")
    client = TestClient(create_app(open_model(str(out)), Limits()))
    text = " ".join(data["runs"]["tagging"][2][0]["tokens"])
    answer = client.post("/api/predict", json={"text": text}).json()
    assert answer["tokens"] == text.split(), answer
    assert answer["tags"] == _predictions(runs["tagging"], [{"text": text}])[0]["tags"]
