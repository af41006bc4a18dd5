"""The Python API (issue 23): in-memory data, callbacks that see and stop a run, what ``load`` returns, and
transformers directories taken on the fly by the commands."""

import json

import datasets
import pandas as pd
import pytest

import warmstart
from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.models import minilm_dir
from tests.helpers.shapes import TINY_MODEL
from warmstart.api.data import as_source
from warmstart.data import inline
from warmstart.errors import WarmstartError
from warmstart.hub import on_the_fly

FAST = ["train.batch_size=16", "task.max_length=32", "train.progress=false"]


def test_every_in_memory_form_is_the_same_file(monkeypatch, tmp_path):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path))
    texts, labels = ["a good film", "a bad film", "fine"], ["pos", "neg", "pos"]
    records = [{"text": t, "label": y} for t, y in zip(texts, labels)]
    forms = [
        records,
        list(zip(texts, labels)),
        {"text": texts, "label": labels},
        pd.DataFrame(records),
        datasets.Dataset.from_list(records),
    ]
    specs = {as_source(form) for form in forms}
    assert len(specs) == 1
    (spec,) = specs
    assert spec.startswith("inline:")  # a content hash, not a cache path; the records are in the cache
    assert [json.loads(line) for line in open(inline.path_of(spec))] == records
    assert str(inline.path_of(spec)).startswith(str(tmp_path / "inline"))
    assert as_source("rotten-tomatoes") == "rotten-tomatoes"  # names and paths stay as they are


@pytest.mark.parametrize(
    "data, words",
    [
        ([], "is empty"),
        ([1, 2], r"data\[0\] must be a text.*got an int"),
        ({"text": ["a"], "label": []}, "equal-length"),
    ],
)
def test_bad_in_memory_data_is_one_clear_error(data, words):
    with pytest.raises(WarmstartError, match=words):
        as_source(data)


class Recorder:
    """Sees every step, evaluation and checkpoint; stops the run after step 3."""

    def __init__(self):
        self.steps, self.evaluations, self.saved = [], [], []

    def on_step(self, step, loss):
        self.steps.append(step)
        if step == 3:
            raise warmstart.StopTraining("three steps are enough")

    def on_evaluate(self, step, metrics):
        self.evaluations.append((step, sorted(metrics)))

    def on_save(self, step, path):
        self.saved.append((step, str(path)))


def test_callbacks_see_the_run_and_stop_it(tiny_pretrained, rt_small, tmp_path):
    seen, plain = Recorder(), []
    result = warmstart.finetune(
        *FAST, "train.save_every=2", "evals_per_epoch=6",
        init=tiny_pretrained, data=pd.read_csv(rt_small), out=tmp_path / "ft", epochs=2,
        callbacks=[seen, lambda step, loss: plain.append(step)],
    )  # fmt: skip
    assert seen.steps == plain == [1, 2, 3]  # a function is an on_step callback
    assert [s for s, _ in seen.evaluations] == [0, 2] and "accuracy" in seen.evaluations[1][1]  # 0, every 2
    assert [s for s, _ in seen.saved] == [2, 3]  # the stop's own checkpoint at step 3
    assert seen.saved[-1][1].endswith("step-00000003")
    assert (tmp_path / "ft" / "final").is_dir() and set(result.metrics) >= {"accuracy", "macro_f1"}
    stop = [json.loads(x) for x in open(tmp_path / "ft" / "metrics.jsonl") if '"stop"' in x]
    assert stop == [{**stop[0], "step": 3, "reason": "three steps are enough"}]


def test_load_says_what_a_model_can_do(tiny_pretrained, tmp_path):
    model = warmstart.load(tiny_pretrained)
    assert model.task == "encoder" and model.tokenizer.vocab_size == 1000
    masks = model.fill_mask("The city is the [MASK] of the country.", k=3)
    assert len(masks) == 1 and len(masks[0]) == 3
    assert model.encode(["one text", "two texts"]).shape == (2, 32)
    with pytest.raises(WarmstartError, match="holds a encoder model, which cannot predict"):
        model.predict("a text")
    copy = warmstart.load(model.save(tmp_path / "copy"))
    assert (copy.encode(["one text"]) == model.encode(["one text"])).all()


def test_pretrain_and_tokenizer_from_texts_in_memory(wiki_extracts, tmp_path, monkeypatch):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path / "cache"))
    texts = wiki_extracts[:300]
    tok = warmstart.train_tokenizer(texts=texts, out=tmp_path / "tok", vocab_size=500)
    assert tok.vocab_size == 500
    result = warmstart.pretrain(
        *TINY_MODEL, "train.progress=false", "train.eval_batches=1", "data.seq_len=32",
        texts=texts, tokenizer=tmp_path / "tok", steps=3, out=tmp_path / "pre", train=dict(batch_size=4),
    )  # fmt: skip
    assert result.command == "pretrain" and result.result["step"] == 3 and "loss" in result.metrics
    assert result.load().task == "encoder"


def test_train_tokenizer_cased_keeps_case_that_the_default_folds(wiki_extracts, tmp_path):
    texts = [*wiki_extracts[:200], *["Paris is not paris."] * 50]
    cased = warmstart.train_tokenizer(texts=texts, out=tmp_path / "cased", vocab_size=600, cased=True)
    folded = warmstart.train_tokenizer(texts=texts, out=tmp_path / "uncased", vocab_size=600)
    assert cased.encode("Paris") != cased.encode("paris")
    assert folded.encode("Paris") == folded.encode("paris")
    with pytest.raises(warmstart.WarmstartError, match="cased"):
        warmstart.train_tokenizer(texts=texts, out=tmp_path / "bad", cased="yes")


def test_finetune_init_and_predict_take_a_transformers_directory(rt_small, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(on_the_fly, "_SAID", set())  # said once per process: an earlier test may have said it
    out = tmp_path / "ft"
    argv = ["finetune", "--init", minilm_dir(), "--dataset", rt_small, "--out", out, "train.steps=2", *FAST]
    code, _, err = run(capsys, *argv, "train.eval_at_start=false")
    assert code == 0, err
    assert "is a transformers model:" in err and "imported" in err
    config = json.loads((out / "best" / "config.json").read_text())
    assert config["hidden_size"] == 384 and config["warmstart"]["task"]["name"] == "classification"
    code, _, err = run(capsys, "predict", minilm_dir(), "--input", rt_small)
    assert_one_line_error(code, err, "holds a pretrained model, not a finetuned one")


def test_word2vec_from_texts_in_memory(wiki_extracts, tmp_path, monkeypatch):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path / "cache"))
    result = warmstart.train_word2vec(
        texts=wiki_extracts[:400], out=tmp_path / "w2v", dim=16, epochs=1, min_count=2
    )
    assert result.command == "word2vec" and result.metrics["train"]["vocab_size"] > 500
    assert set(result.metrics["similarity"]) == {"wordsim353", "simlex999"}
    saved = json.loads(json.dumps(result.result["train"]))
    assert saved["seconds"] > 0 and (tmp_path / "w2v" / "metrics.json").is_file()


def test_a_generator_generates_as_the_command_does(wiki_extracts, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path / "cache"))
    warmstart.train_tokenizer(texts=wiki_extracts[:300], out=tmp_path / "tok", kind="bpe", vocab_size=800)
    result = warmstart.pretrain(
        "train.progress=false", "train.batch_size=4", "data.seq_len=64", "model.n_positions=64",
        "train.eval_batches=1", preset="gpt2-tiny", texts=wiki_extracts[300:360], tokenizer=tmp_path / "tok",
        steps=4, out=tmp_path / "gpt2",
    )  # fmt: skip
    model = result.load()
    assert model.task == model.kind == "generator"  # kind: the old name
    texts = model.generate(["The city of", "A river"], max_new_tokens=5)
    one = model.generate("The city of", max_new_tokens=5)
    assert len(texts) == 2 and texts[0] == one and one.startswith("The city of")
    capsys.readouterr()
    code, out, _ = run(capsys, "generate", tmp_path / "gpt2", "--prompt", "The city of", "max_new_tokens=5")
    assert code == 0 and out.strip() == one
    with pytest.raises(WarmstartError, match="cannot encode"):
        model.encode(["text"])
