"""`--head NAME` on a multitask encoder run (checkpoints/head_view.py): one head behaves as the single-task
model of its task in evaluate, predict, export and warmstart.load, with the scores the run itself gave it;
`--head` on another model, an unknown head and a multitask run without `--head` are one line each."""

import csv
import itertools
import json

import pytest
import torch
import transformers

from tests.helpers.cli import assert_one_line_error
from tests.helpers.multitask import HEADS
from warmstart.checkpoints.load import load_finetuned
from warmstart.cli.main import main
from warmstart.data.catalog import open_dataset
from warmstart.errors import WarmstartError

TEXTS = ["a gorgeous , witty , seductive movie .", "the film is strictly routine .", "not bad at all"]
# the run: tests/tasks/conftest.py's mt_run, shared with test_multitask_heads.py (tests/helpers/multitask.py)


def test_each_head_evaluates_as_the_run_scored_it(mt_run, tmp_path):
    """`evaluate RUN --head NAME` on the run's own test rows gives the NAME/... metrics the run logged."""
    logged = json.loads((mt_run / "test_metrics.json").read_text())["test"]
    rows = {name: list(itertools.islice(open_dataset(name).records("test"), 8)) for name in HEADS[:2]}
    reviews = tmp_path / "rt.csv"
    with reviews.open("w", newline="") as fh:
        csv.writer(fh).writerows([("text", "label"), *((r["text"], r["label"]) for r in rows[HEADS[0]])])
    tagged = tmp_path / "pos.conll"
    sentences = ("\n".join(f"{w}\t{t}" for w, t in zip(r["tokens"], r["tags"])) for r in rows[HEADS[1]])
    tagged.write_text("\n\n".join(sentences) + "\n")
    scored = {HEADS[0]: (reviews, ("accuracy", "macro_f1")), HEADS[1]: (tagged, ("accuracy",))}
    for name, (data, keys) in scored.items():
        out = tmp_path / f"{name}.json"
        argv = ["evaluate", str(mt_run), "--head", name, "--test-file", str(data), "--out", str(out)]
        assert main(argv) == 0
        got = json.loads(out.read_text())
        assert got["examples"] == 8
        for key in keys:
            assert got["metrics"][key] == pytest.approx(logged[f"{name}/{key}"], abs=1e-6), (name, key)


def own_predictions(run, name: str, records: list[dict]) -> list[dict]:
    """What the multitask unit's own head ``name`` predicts for ``records``."""
    unit, task, tokenizer, labels = load_finetuned(run / "best")
    task = task.heads  # the encoder's multitask (tasks/multitask_heads.py)
    spec = next(s for s in task.heads(labels) if s["name"] == name)
    features = task.members[name].encode(records, tokenizer, spec["labels"], "the input")
    with torch.inference_mode():
        return [p for batch in features.eval_batches(64) for p in unit.heads[name].predict(batch)]


def bare(predictions: list[dict]) -> list[dict]:
    """Predictions without the input they echo."""
    return [{k: v for k, v in p.items() if k not in ("text", "tokens")} for p in predictions]


def test_predict_and_load_give_the_heads_own_predictions(mt_run, tmp_path, capsys):
    import warmstart

    want = own_predictions(mt_run, HEADS[0], [{"text": t} for t in TEXTS])
    src = tmp_path / "in.txt"
    src.write_text("\n".join(TEXTS) + "\n")
    capsys.readouterr()
    assert main(["predict", str(mt_run), "--head", HEADS[0], "--input", str(src)]) == 0
    printed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    model = warmstart.load(mt_run, head=HEADS[0], device="cpu")
    assert model.task == "classification" and bare(model.predict(TEXTS)) == bare(printed) == want
    assert set(want[0]["probabilities"]) == {"fresh", "rotten"}
    assert warmstart.load(mt_run, head=HEADS[1], device="cpu").task == "tagging"


def test_export_hf_of_a_head_loads_in_transformers_with_its_probabilities(mt_run, tmp_path):
    out = tmp_path / "hf"
    assert main(["export", str(mt_run), "--head", HEADS[0], "--out", str(out)]) == 0
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(out).eval()
    tok = transformers.AutoTokenizer.from_pretrained(out)
    assert type(hf).__name__ == "BertForSequenceClassification"
    assert sorted(hf.config.id2label.values()) == ["fresh", "rotten"]
    with torch.no_grad():
        probs = hf(**tok(TEXTS, padding=True, return_tensors="pt")).logits.softmax(-1)
    want = own_predictions(mt_run, HEADS[0], [{"text": t} for t in TEXTS])
    for row, pred in zip(probs, want):
        theirs = {hf.config.id2label[i]: float(p) for i, p in enumerate(row)}
        assert theirs == pytest.approx(pred["probabilities"], abs=1e-4)


def head_export(run, out, *flags) -> list[str]:
    """`warmstart export RUN --head FIRST FLAGS --out OUT` as argv."""
    return ["export", str(run), "--head", HEADS[0], *flags, "--out", str(out)]


def test_onnx_and_int8_exports_of_a_head_predict_as_the_head(mt_run, tmp_path, capsys):
    import warmstart

    pytest.importorskip("onnxruntime")
    want = own_predictions(mt_run, HEADS[0], [{"text": t} for t in TEXTS])
    onnx, int8 = tmp_path / "onnx", tmp_path / "int8"
    assert main(head_export(mt_run, onnx, "--to", "onnx")) == 0
    assert main(head_export(mt_run, int8, "--to", "torch", "--quantize", "int8")) == 0
    assert f"head {HEADS[0]}" in capsys.readouterr().out  # the line says which head was exported
    said = json.loads((onnx / "config.json").read_text())["onnx"]["source"]
    assert said == f"{mt_run / 'best'} --head {HEADS[0]}"  # where it came from, as a command takes it
    got = bare(warmstart.load(onnx, device="cpu").predict(TEXTS))
    for mine, theirs in zip(got, want):
        assert mine["probabilities"] == pytest.approx(theirs["probabilities"], abs=1e-4)
    quantized = warmstart.load(int8, device="cpu")
    assert quantized.task == "classification" and len(quantized.predict(TEXTS)) == 3


def test_head_refusals_are_one_line(mt_run, tiny_pretrained, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a fine film\n")
    one_of = "pass --head NAME (one of: rotten-tomatoes, brown-pos-universal, wiki-qa)"
    for argv in (  # a multitask run without --head: every command says which heads there are
        ["evaluate", str(mt_run), "--data", "rotten-tomatoes"],
        ["predict", str(mt_run), "--input", str(src)],
        ["export", str(mt_run), "--out", str(tmp_path / "hf")],
        ["export", str(mt_run), "--to", "torch", "--quantize", "int8", "--out", str(tmp_path / "int8")],
    ):
        assert_one_line_error(main(argv), capsys.readouterr().err, "one head per task", one_of)
    assert not (tmp_path / "hf").exists() and not (tmp_path / "int8").exists()
    argv = ["predict", str(mt_run), "--head", "imdb", "--input", str(src)]
    assert_one_line_error(main(argv), capsys.readouterr().err, "--head imdb", "no head imdb", one_of)
    argv = head_export(mt_run, tmp_path / "cal", "--to", "onnx", "--quantize", "int8", "--calibrate", "8")
    assert_one_line_error(
        main(argv), capsys.readouterr().err, "--calibrate reads one dataset", "drop --calibrate"
    )
    assert not (tmp_path / "cal").exists()
    argv = ["export", str(tiny_pretrained), "--head", HEADS[0], "--out", str(tmp_path / "pre")]
    assert_one_line_error(main(argv), capsys.readouterr().err, f"--head {HEADS[0]}", "drop --head")
    import warmstart
    from warmstart.serve.load import open_model

    with pytest.raises(
        WarmstartError, match=r"pass --head NAME \(one of: rotten-tomatoes, brown-pos-universal, wiki-qa\)"
    ):
        open_model(str(mt_run))
    with pytest.raises(WarmstartError, match=r"pass head=NAME|pass head='?NAME"):
        warmstart.load(mt_run, device="cpu").predict(TEXTS)
