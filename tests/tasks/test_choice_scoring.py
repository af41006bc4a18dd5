"""Choices scored by likelihood: the batched scorer equals each choice's log-probability computed one by one
on tiny T5, BART and GPT-2 models, always picks a choice, and a passage choice file finetunes and predicts
from the command line with an accuracy."""

import json

import pytest
import torch

from tests.helpers.data import choice_records
from tests.helpers.runs import pretrain_family
from tests.helpers.shapes import SHAPES
from warmstart.cli.main import main
from warmstart.config import from_dict
from warmstart.errors import WarmstartError
from warmstart.registry import family
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.choice_scoring import choice_scoring
from warmstart.tasks.text_to_text import TextToTextTask, TextToTextUnit, text_records, with_choices
from warmstart.tokenization.tokenizer import Tokenizer


def race_rows(wiki_extracts, n):
    """RACE-layout rows of real text: an extract's first sentence as the article, which sentence comes next
    as the question (its second sentence among others' second sentences)."""
    rows = []
    for r in choice_records(wiki_extracts, n):
        rows.append({"article": r["text"], "question": "Which sentence comes next?", "options": r["choices"],
                     "answer": "ABCD"[int(r["label"])]})  # fmt: skip
    return rows


def passage_records(wiki_extracts, n):
    """The rows above as text_to_text prepares them (UnifiedQA's input, the choices, the right index)."""
    rows = [{"text": r["question"], "passage": r["article"], "choices": r["options"],
             "label": str("ABCD".index(r["answer"]))} for r in race_rows(wiki_extracts, n)]  # fmt: skip
    return text_records(rows, "choice", {}, "test")


def tiny_unit(arch, shards, mode="likelihood"):
    """(unit, task) of a randomly initialised tiny ``arch`` model (seed 0) bound to the shards' tokenizer."""
    tok = Tokenizer.load(shards / "tokenizer")
    fam = family(arch)
    shape = {k.split(".", 1)[1]: int(v) for k, v in (x.split("=") for x in SHAPES[arch])}
    torch.manual_seed(0)
    model = fam.model(from_dict(fam.config, {**shape, "vocab_size": tok.vocab_size}))
    task = TextToTextTask(TaskConfig(name="text_to_text", max_length=56, max_target_length=8))
    task.cfg.choice_scoring = mode  # task.choice_scoring
    start = {"t5": tok.pad_id, "bart": tok.eos_id}.get(arch)
    config_json = {"model_type": arch, "decoder_start_token_id": start}
    task.bind(tok, config_json, fam)
    return TextToTextUnit(model, task).eval(), task


def one_by_one(model, arch, source, target, start):
    """The log-probability of ``target`` after ``source``, computed alone: no batch, no padding."""
    with torch.no_grad():
        if arch == "gpt2":
            ids = torch.tensor([source + target])
            logits = model.lm_logits(model(ids, torch.ones_like(ids)))[0]
            rows = range(len(source) - 1, len(source) + len(target) - 1)
        else:
            ids, dec = torch.tensor([source]), torch.tensor([[start] + target[:-1]])
            logits = model.lm_logits(model(ids, torch.ones_like(ids), dec, torch.ones_like(dec)))[0]
            rows = range(len(target))
    log_probs = logits.float().log_softmax(-1)
    return sum(float(log_probs[r, t]) for r, t in zip(rows, target))


@pytest.mark.parametrize("arch", ["t5", "bart", "gpt2"])
def test_batched_scores_equal_each_choice_alone(arch, unigram_shards, bpe_shards, wiki_extracts):
    unit, task = tiny_unit(arch, unigram_shards if arch == "t5" else bpe_shards)
    records = passage_records(wiki_extracts, 6)  # 2, 3 or 4 choices
    batch = task.encode(records, task.tokenizer, [], "test").take(range(len(records)))
    calls = []
    unit.model.register_forward_hook(lambda *args: calls.append(1))
    for mode in ("likelihood", "mean"):
        picks = unit.choose(batch["sources"], with_choices(batch), mode)
        assert len(calls) == 1  # one forward pass for all the choices of the batch
        for k, (options, gold, texts) in with_choices(batch).items():
            alone = [
                one_by_one(unit.model, arch, batch["sources"][k], t, task.decoder_start) for t in options
            ]
            if mode == "mean":
                alone = [s / len(t) for s, t in zip(alone, options)]
            assert picks[k][1] == pytest.approx(alone, abs=1e-4)
            assert picks[k][0] == max(range(len(alone)), key=alone.__getitem__)
            assert texts == records[k]["choices"] and gold == records[k]["choice"]
        calls.clear()


@pytest.mark.parametrize("arch", ["t5", "gpt2"])
def test_likelihood_always_picks_a_choice(arch, unigram_shards, bpe_shards, wiki_extracts):
    """An untrained model writes text that is none of the choices: generation misses every row, likelihood
    answers each with one of its choices, and accuracy counts the picks."""
    shards = unigram_shards if arch == "t5" else bpe_shards
    records = passage_records(wiki_extracts, 8)
    for mode in ("generate", "likelihood"):
        unit, task = tiny_unit(arch, shards, mode)
        batch = task.encode(records, task.tokenizer, [], "test").take(range(len(records)))
        texts, picks = unit.outputs(batch)
        _, stats = unit(batch)
        if mode == "generate":
            assert picks == {} and not any(t in r["choices"] for t, r in zip(texts, records))
            assert stats["accuracy"] == (0.0, 8)
        else:
            assert all(t == r["choices"][picks[k][0]] for k, (t, r) in enumerate(zip(texts, records)))
            right = sum(picks[k][0] == r["choice"] for k, r in enumerate(records))
            assert stats["accuracy"] == (float(right), 8) and "token_accuracy" in stats
        predicted = unit.predict(batch)
        assert [p["generated"] for p in predicted] == texts
        assert all(("choice" in p) == (mode != "generate") for p in predicted)


def test_a_bad_scoring_is_refused():
    cfg = TaskConfig(name="text_to_text")
    assert choice_scoring(cfg) == "likelihood"
    cfg.choice_scoring = "best"
    with pytest.raises(WarmstartError, match="task.choice_scoring must be one of likelihood, mean, generate"):
        choice_scoring(cfg)


@pytest.mark.integration
def test_finetune_and_predict_a_passage_choice_file(unigram_shards, wiki_extracts, tmp_path, capsys):
    data = tmp_path / "race.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in race_rows(wiki_extracts, 40)), encoding="utf-8")
    init = tmp_path / "pre"
    pretrain_family("t5", unigram_shards, init, steps=6)
    run = tmp_path / "ft"
    argv = [
        "finetune",
        "--task",
        "text_to_text",
        "--init",
        str(init),
        "--dataset",
        str(data),
        "--out",
        str(run),
    ]
    argv += ["--epochs", "1", "train.progress=false", "train.batch_size=8", "task.max_length=60"]
    argv += ["task.max_target_length=24", "evals_per_epoch=1"]
    assert main(argv) == 0
    test = json.loads((run / "test_metrics.json").read_text())
    assert test["metric"] == "accuracy" and 0.0 <= test["test"]["accuracy"] <= 1.0
    assert {"exact_match", "token_accuracy", "rougeL"} <= set(test["test"])
    row = race_rows(wiki_extracts, 41)[40]
    given = tmp_path / "in.jsonl"
    given.write_text(
        json.dumps({"question": row["question"], "passage": row["article"], "choices": row["options"]})
    )
    capsys.readouterr()
    assert main(["predict", str(run), "--input", str(given)]) == 0
    (pred,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert pred["generated"] == row["options"][pred["choice"]] and len(pred["scores"]) == len(row["options"])
    assert pred["text"].startswith("Which sentence comes next? \\n (A) ")
