"""The Python API refuses a wrong argument as warmstart's error, naming it, before it writes anything
(issue 38): one table over every public function and ``Model`` method (each row: the call, the argument the
one-line message must name, and whether it is a TypeError or a ValueError: the error is both that and a
``WarmstartError``), then the two cases that need a run: ``callbacks=[42]`` leaves no run directory (so the
same call, mended, is not refused), and a ``StopTraining`` at step 1 still leaves a best model to score."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import warmstart
from tests.api.bad_arguments_by_class import BY_CLASS
from tests.helpers.api_calls import FAST, bad, ft, pre, tok
from warmstart.errors import WarmstartError

pytestmark = pytest.mark.integration

HUGE = "x" * 5_000_000  # a text passed where a path goes


class OnStep:
    def on_step(self, step: int, loss: float) -> None:
        pass


CASES = [
    # Model.predict: texts only, valid Unicode, not blank; sizes at least 1
    bad("predict-lone-surrogate", lambda fx: fx.model.predict("a \ud800 b"), "inputs"),
    bad("predict-surrogate-in-a-list", lambda fx: fx.model.predict(["fine", "x\udfff"]), "inputs[1]"),
    bad("predict-surrogate-in-a-dict", lambda fx: fx.model.predict({"text": "\ud83d"}), "inputs['text']"),
    bad("predict-surrogate-in-a-pair", lambda fx: fx.model.predict([("a", "b\ud800")]), "inputs[0][1]"),
    bad("predict-batch-size-0", lambda fx: fx.model.predict(["a"], batch_size=0), "batch_size"),
    bad(
        "predict-batch-size-float",
        lambda fx: fx.model.predict(["a"], batch_size=2.5),
        "batch_size",
        TypeError,
    ),
    bad("predict-numbers", lambda fx: fx.model.predict([1, 2]), "inputs[0]", TypeError),
    bad("predict-nan", lambda fx: fx.model.predict([float("nan")]), "inputs[0]", TypeError),
    bad("predict-none-among-texts", lambda fx: fx.model.predict(["a", None]), "inputs[1]", TypeError),
    bad("predict-empty-list", lambda fx: fx.model.predict([]), "inputs"),
    bad("predict-blank-text", lambda fx: fx.model.predict("   "), "inputs"),
    bad("predict-three-tuple", lambda fx: fx.model.predict([("a", "b", "c")]), "inputs[0]", TypeError),
    bad("predict-a-number", lambda fx: fx.model.predict(5), "inputs", TypeError),
    bad("predict-top-k-text", lambda fx: fx.model.predict("a", top_k="all"), "top_k", TypeError),
    # Model.encode
    bad("encode-empty-list", lambda fx: fx.model.encode([]), "texts"),
    bad("encode-max-length-0", lambda fx: fx.model.encode(["a"], max_length=0), "max_length"),
    bad("encode-batch-size-0", lambda fx: fx.model.encode(["a"], batch_size=0), "batch_size"),
    bad("encode-lone-surrogate", lambda fx: fx.model.encode(["a", "\udc00"]), "texts[1]"),
    bad("encode-a-number-among-texts", lambda fx: fx.model.encode(["a", 3]), "texts[1]", TypeError),
    bad("encode-bytes", lambda fx: fx.model.encode(b"abc"), "texts", TypeError),
    bad("encode-unknown-pooling", lambda fx: fx.model.encode("a", pooling="avg"), "pooling"),
    bad(
        "encode-switch-as-text",
        lambda fx: fx.model.encode("a", normalize_embeddings="yes"),
        "normalize_embeddings",
        TypeError,
    ),  # fmt: skip
    bad("encode-device-a-number", lambda fx: fx.model.encode("a", device=3), "device", TypeError),
    bad("encode-layer-a-list", lambda fx: fx.model.encode("a", layer=[1]), "layer", TypeError),
    # Model.similarity, fill_mask, generate (the arguments are checked before what the model can do)
    bad("similarity-empty", lambda fx: fx.model.similarity([], [[1.0, 2.0]]), "a"),
    bad("similarity-ragged", lambda fx: fx.model.similarity([[1.0]], [[1.0, 2.0], [1.0]]), "b", TypeError),
    bad("similarity-nan", lambda fx: fx.model.similarity(np.array([np.nan, 1.0]), [[1.0, 2.0]]), "a"),
    bad("similarity-3d", lambda fx: fx.model.similarity(np.ones((2, 2, 2)), np.ones((2, 2))), "a"),
    bad("fill-mask-k-0", lambda fx: fx.model.fill_mask("The [MASK] city.", k=0), "k"),
    bad("fill-mask-text-a-number", lambda fx: fx.model.fill_mask(5), "text", TypeError),
    bad("fill-mask-surrogate", lambda fx: fx.model.fill_mask("The [MASK] \ud800"), "text"),
    bad("generate-no-prompts", lambda fx: fx.model.generate([]), "prompt"),
    bad("generate-max-new-tokens-0", lambda fx: fx.model.generate("a", max_new_tokens=0), "max_new_tokens"),
    bad("generate-top-p-above-1", lambda fx: fx.model.generate("a", top_p=1.5), "top_p"),
    bad(
        "generate-temperature-nan", lambda fx: fx.model.generate("a", temperature=float("nan")), "temperature"
    ),
    bad("generate-empty-stop", lambda fx: fx.model.generate("a", stop=[""]), "stop[0]"),
    bad(
        "generate-sequences-as-text",
        lambda fx: fx.model.generate("a", num_return_sequences="2"),
        "num_return_sequences",
        TypeError,
    ),  # fmt: skip
    # load, Model.to / save / export_hf, open_run
    bad("load-a-5mb-path", lambda fx: warmstart.load(HUGE), "path"),
    bad("load-a-nul", lambda fx: warmstart.load("runs/a\0b"), "path"),
    bad("load-an-empty-path", lambda fx: warmstart.load(""), "path"),
    bad("load-none", lambda fx: warmstart.load(None), "path", TypeError),
    bad("load-an-integer-dtype", lambda fx: warmstart.load(fx.pre, dtype=torch.int64), "dtype"),
    bad("load-device-a-number", lambda fx: warmstart.load(fx.pre, device=3), "device", TypeError),
    bad("load-head-a-number", lambda fx: warmstart.load(fx.pre, head=1), "head", TypeError),
    bad("load-head-empty", lambda fx: warmstart.load(fx.pre, head=""), "head"),
    bad("to-device-a-list", lambda fx: fx.model.to(["cpu"]), "device", TypeError),
    bad("save-a-name-too-long", lambda fx: fx.model.save(fx.tmp / ("n" * 300)), "directory"),
    bad(
        "export-overwrite-as-text",
        lambda fx: fx.model.export_hf(fx.tmp / "hf", overwrite="yes"),
        "overwrite",
        TypeError,
    ),  # fmt: skip
    bad("open-run-a-5mb-path", lambda fx: warmstart.open_run(HUGE), "path"),
    # finetune: data, paths, typed keywords, callbacks
    bad("finetune-data-a-5mb-string", lambda fx: ft(fx, data=HUGE), "data"),
    bad("finetune-split-a-5mb-string", lambda fx: ft(fx, data={"train": HUGE}), "data['train']"),
    bad("finetune-init-with-a-nul", lambda fx: ft(fx, init="runs/\0"), "init"),
    bad("finetune-out-name-too-long", lambda fx: ft(fx, out=fx.tmp / ("o" * 300)), "out"),
    bad("finetune-batch-size-0", lambda fx: ft(fx, batch_size=0), "batch_size"),
    bad("finetune-epochs-as-text", lambda fx: ft(fx, epochs="3"), "epochs", TypeError),
    bad("finetune-lr-as-text", lambda fx: ft(fx, lr="fast"), "lr", TypeError),
    bad("finetune-lr-inf", lambda fx: ft(fx, lr=float("inf")), "lr"),
    bad("finetune-seeds-a-float", lambda fx: ft(fx, seeds=[1, 1.5]), "seeds[1]", TypeError),
    bad("finetune-seeds-empty", lambda fx: ft(fx, seeds=[]), "seeds"),
    bad("finetune-bf16-as-text", lambda fx: ft(fx, bf16="true"), "bf16", TypeError),
    bad("finetune-task-a-number", lambda fx: ft(fx, task=5), "task", TypeError),
    bad("finetune-overwrite-as-text", lambda fx: ft(fx, overwrite="no"), "overwrite", TypeError),
    bad("finetune-callback-42", lambda fx: ft(fx, callbacks=[42]), "callbacks[0]", TypeError),
    bad("finetune-callback-a-class", lambda fx: ft(fx, callbacks=[OnStep]), "callbacks[0]", TypeError),
    bad("finetune-callbacks-not-a-list", lambda fx: ft(fx, callbacks=OnStep()), "callbacks", TypeError),
    # pretrain, train_tokenizer, word2vec
    bad("pretrain-steps-negative", lambda fx: pre(fx, steps=-1), "steps"),
    bad("pretrain-corpus-a-number", lambda fx: pre(fx, corpus=["wiki.txt", 5]), "corpus[1]", TypeError),
    bad("pretrain-texts-a-5mb-string", lambda fx: pre(fx, texts=HUGE), "texts"),
    bad("pretrain-callback-42", lambda fx: pre(fx, callbacks=[42]), "callbacks[0]", TypeError),
    bad("tokenizer-vocab-size-big", lambda fx: tok(fx, vocab_size="big"), "vocab_size", TypeError),
    bad("tokenizer-vocab-size-0", lambda fx: tok(fx, vocab_size=0), "vocab_size"),
    bad("tokenizer-vocab-size-huge", lambda fx: tok(fx, vocab_size=10**12), "vocab_size"),
    bad("tokenizer-unknown-kind", lambda fx: tok(fx, kind="wp"), "kind"),
    bad("tokenizer-min-frequency-negative", lambda fx: tok(fx, min_frequency=-1), "min_frequency"),
    bad("tokenizer-out-empty", lambda fx: tok(fx, out=""), "out"),
    bad("tokenizer-corpus-5mb", lambda fx: tok(fx, texts=None, corpus=HUGE), "corpus"),
    bad("word2vec-out-with-a-nul", lambda fx: warmstart.train_word2vec(texts=["a b"], out="w\0"), "out"),
]


@pytest.fixture(scope="module")
def encoder(tiny_pretrained):
    return warmstart.load(tiny_pretrained, device="cpu")


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*")}


@pytest.mark.parametrize("case", CASES + BY_CLASS, ids=[c.id for c in CASES + BY_CLASS])
def test_a_wrong_argument_is_one_line_naming_it_and_nothing_is_written(
    case, encoder, tiny_pretrained, tmp_path, test_cache, monkeypatch
):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # word2vec's default out= lies here: nothing may appear
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a directory\n")
    fx = SimpleNamespace(model=encoder, pre=tiny_pretrained, tmp=work, file=a_file)
    cache_before, run_before = _files(test_cache), _files(tiny_pretrained)
    with pytest.raises(WarmstartError) as caught:
        case.call(fx)
    error = caught.value
    assert isinstance(error, case.kind), f"{type(error).__mro__}: {error}"
    message = str(error)
    assert "\n" not in message and len(message) < 400, message[:500]  # one line; a 5 MB value is not echoed
    assert case.argument in message, message
    assert "--" not in message.replace("--max-length", ""), message  # Python's words, not the CLI's
    assert list(work.iterdir()) == []  # nothing written: no run directory, no tokenizer, no export
    assert _files(test_cache) == cache_before and _files(tiny_pretrained) == run_before


def test_every_public_function_and_method_has_a_row():
    called = {c.id.split("-")[0] for c in CASES + BY_CLASS}
    methods = {"predict", "encode", "similarity", "fill", "generate", "to", "save", "export"}
    functions = {"load", "open", "finetune", "pretrain", "tokenizer", "word2vec", "search"}
    assert methods | functions <= called


class StopAtOne:
    """Asks to stop after the first step: before any evaluation chose a best model."""

    def __init__(self):
        self.evaluated: list[int] = []

    def on_step(self, step: int, loss: float) -> None:
        raise warmstart.StopTraining("one step is enough")

    def on_evaluate(self, step: int, metrics: dict) -> None:
        self.evaluated.append(step)


def test_a_refused_callback_leaves_no_run_and_a_stop_at_step_1_leaves_a_best_model(
    tiny_pretrained, rt_small, tmp_path
):
    out = tmp_path / "ft"
    call = dict(init=tiny_pretrained, data=rt_small, out=out, epochs=1)
    with pytest.raises(TypeError, match=r"callbacks\[0\] is an int \(42\)"):
        warmstart.finetune(*FAST, **call, callbacks=[42])
    assert not out.exists()  # so the same call, with a good callback, is not refused as "out exists"
    stop = StopAtOne()
    run = warmstart.finetune(*FAST, "evals_per_epoch=1", **call, callbacks=[stop])
    metrics = json.loads((out / "test_metrics.json").read_text())
    assert metrics["steps"] == 1 and metrics["stopped_early"] and metrics["best_step"] == 1
    assert json.loads((out / "best" / "best.json").read_text())["step"] == 1
    assert stop.evaluated == [0, 1]  # the start, then the stop step's evaluation that chose the best model
    records = [json.loads(line) for line in open(out / "metrics.jsonl")]
    assert [r["step"] for r in records if r["split"] == "validation"] == [0, 1]
    assert [r["reason"] for r in records if r["split"] == "stop"] == ["one step is enough"]
    assert set(run.metrics) >= {"accuracy", "macro_f1"}
    model = run.load(device="cpu")
    labels = set(model.predict(["A warm film."])[0]["probabilities"])
    assert model.predict("A warm film.")["label"] in labels and len(labels) == 2
    # a finetuned model's own checks name the input as the caller wrote it, never an "input line"
    with pytest.raises(WarmstartError, match=r"inputs\[1\]: 'text' must be a string"):
        model.predict(["fine", {"text": 5}])
    with pytest.raises(WarmstartError, match=r"inputs\[0\] has no key 'text' \(its keys: text_pair\)"):
        model.predict([{"text_pair": "only a pair"}])
    assert os.path.isdir(out / "best")
