"""UnifiedQA formats in plain text_to_text (one formatter with multitask), and a corpus among multitask's
members: span-corrupted / denoised / causal-LM rows really are what the objectives make, the mixing rate
holds, batches stay a pure function of their index, the corpus loss is logged apart, errors are one line."""

import json
import math

import pytest
import torch

from tests.helpers.shapes import SHAPES
from warmstart.checkpoints.load import load_encoder
from warmstart.cli.main import main
from warmstart.commands.finetune import resolve
from warmstart.commands.pretrain import pretrain
from warmstart.data.catalog import open_dataset
from warmstart.errors import WarmstartError
from warmstart.objectives.lm_loss import IGNORE
from warmstart.objectives.span_corruption import sentinel_ids
from warmstart.registry import family
from warmstart.tasks.corpus_member import corpus_objective
from warmstart.tasks.multitask import MultitaskTask
from warmstart.tasks.text_metrics import output_scores
from warmstart.tasks.text_to_text import TextToTextTask, TextToTextUnit
from warmstart.tokenization.tokenizer import Tokenizer

# ---------------------------------------------------------------- text_to_text formats as multitask does


@pytest.fixture(scope="module")
def choice_file(tmp_path_factory):
    """A real multiple-choice file: a wiki-descriptions lead (cut to 200 characters) and four short
    descriptions, its own at index i % 4 and the next three articles' as the distractors."""
    rows = [r for _, r in zip(range(64), open_dataset("wiki-descriptions").records("all"))]
    path = tmp_path_factory.mktemp("choice") / "describe.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i, r in enumerate(rows[:60]):
            others = [rows[i + k]["target"] for k in (1, 2, 3)]
            choices = others[: i % 4] + [r["target"]] + others[i % 4 :]
            fh.write(json.dumps({"context": r["text"][:200], "choices": choices, "label": i % 4}) + "\n")
    return path


def finetune_cfg(*overrides):
    return resolve(None, {"init": "unused"}, ["data.train_limit=30", *overrides])


@pytest.mark.parametrize("dataset", ["wiki-qa", "choice", "rotten-tomatoes"])
def test_text_to_text_writes_the_strings_multitask_writes(dataset, choice_file):
    name = str(choice_file) if dataset == "choice" else dataset
    limits = ["data.validation_limit=12", "data.test_limit=12", "multitask.eval_limit=12"]
    plain_cfg = finetune_cfg(f"data.dataset={name}", *limits)
    plain, plain_name = TextToTextTask(plain_cfg.task).read_splits(plain_cfg)
    multi_cfg = finetune_cfg(f"multitask.tasks={name}=", *limits)
    multi, _ = MultitaskTask(multi_cfg.task).read_splits(multi_cfg)
    keys = ("text", "target", "answers", "scoring")
    for split in ("train", "validation", "test"):
        assert len(plain[split]) == len(multi[split]) > 0
        shown = [[r.get(k) for k in keys] for r in plain[split]]
        assert shown == [[r.get(k) for k in keys] for r in multi[split]]
    first = plain["train"][0]
    if dataset == "wiki-qa":  # UnifiedQA's extractive format: question \n context -> the answer span
        assert first["text"].startswith("What is Academic art? \n Academic art, academicism, or academism")
        assert (first["target"], first["scoring"]) == ("style of painting and sculpture", "answer")
    elif dataset == "choice":  # ... its multiple-choice format: context \n (A) ... (D) ... -> the choice
        assert " \n (A) " in first["text"] and " (D) " in first["text"] and first["scoring"] == "label"
        assert any(f"({c}) {first['target']}" in first["text"] for c in "ABCD")
    else:
        assert first == {**first, "text": "A three-hour cinema master class.", "target": "fresh"}
    assert plain_name == (choice_file.name if dataset == "choice" else dataset)


def test_text_to_text_runs_on_wiki_qa_and_scores_answers(t5_init, tmp_path, capsys):
    run = tmp_path / "qa"
    argv = ["finetune", "--task", "text_to_text", "--init", str(t5_init), "--dataset", "wiki-qa"]
    argv += ["--out", str(run), "train.steps=3", "train.progress=false", "train.batch_size=8"]
    argv += ["task.max_length=48", "task.max_target_length=8", "data.train_limit=16"]
    argv += ["data.validation_limit=6", "data.test_limit=6", "evals_per_epoch=1"]
    assert main(argv) == 0
    test = json.loads((run / "test_metrics.json").read_text())["test"]
    assert {"exact_match", "f1", "rougeL", "loss"} <= set(test)
    assert 0.0 <= test["exact_match"] <= test["f1"] <= 100.0
    capsys.readouterr()
    assert main(["evaluate", str(run), "--data", "wiki-qa", "--split", "validation"]) == 0
    assert "f1" in capsys.readouterr().out


def test_output_scores_are_exact_match_and_f1_of_squad():
    assert TextToTextUnit.summarize({"exact_match": 0.5, "f1": 0.75, "loss": 1.0})["f1"] == pytest.approx(
        75.0
    )

    golds = [["the film genre", "genre"], ["no answer"], ["Paris"]]
    scores = output_scores("answer", ["Genre", "film", "paris."], golds)
    assert scores["exact_match"] == (2, 3) and scores["f1"][0] == pytest.approx(2.0)
    assert output_scores("label", ["positive", "negative"], [["positive"], ["positive"]]) == {
        "exact_match": (1, 2)
    }
    assert output_scores("text", ["a"], [["a"]]) == {}


# ---------------------------------------------------------------- corpus member batches


@pytest.fixture(scope="module")
def t5_init(unigram_shards, tmp_path_factory):
    return tiny_run("t5", unigram_shards, tmp_path_factory.mktemp("corpus") / "t5")


def tiny_run(arch, shards, out):
    flags = {"out": str(out), "arch": arch, "data": {"shards": str(shards)}, "train": {"steps": 4}}
    extra = ["data.seq_len=64", "train.batch_size=8", "train.progress=false", "train.save_every=0"]
    pretrain(None, None, flags, SHAPES[arch] + extra + ["train.eval_every=0", "train.eval_batches=1"])
    return out


def bound_task(shards, arch, *overrides):
    """A multitask task bound to the shards' tokenizer as an ``arch`` run, its records, training features."""
    tok = Tokenizer.load(shards / "tokenizer")
    cfg = finetune_cfg("task.max_length=48", "multitask.eval_limit=4", *overrides)
    task = MultitaskTask(cfg.task)
    start = {"t5": tok.pad_id, "bart": tok.eos_id}.get(arch)
    task.bind(tok, {"model_type": arch, "decoder_start_token_id": start}, family(arch))
    records, _ = task.read_splits(cfg)
    return task, tok, records, task.encode(records["train"], tok, [], "train")


CORPUS_TASKS = "multitask.tasks=news-headlines=headline,wiki-leads"


def corpus_rows(task, features, batches=4, size=16):
    """(window ids, input ids, labels, decoder input ids) of the corpus rows of the first training batches."""
    source = task.train_batches(features, size, seed=1)
    out = []
    for i in range(batches):
        batch, rows = source.batch(i), [row for _, row in source.draws(i)]
        for k, row in enumerate(rows):
            if batch["tasks"][k] == "wiki-leads":
                mask = batch["attention_mask"][k].bool()
                labels = batch["labels"][k][batch["labels"][k] != IGNORE]
                dec = batch.get("decoder_input_ids")
                out.append(
                    (features.sources[row], batch["input_ids"][k][mask].tolist(), labels.tolist(), dec)
                )
    assert out, "no corpus rows drawn"
    return out


def test_t5_corpus_rows_are_span_corrupted(unigram_shards):
    task, tok, records, features = bound_task(unigram_shards, "t5", CORPUS_TASKS, "multitask.mixing=equal")
    assert {r["task"] for r in records["validation"] + records["test"]} == {"news-headlines"}
    sentinels = sentinel_ids(tok)
    for window, source, target, _ in corpus_rows(task, features):
        assert len(source) <= 48 and source[-1] == tok.eos_id and target[-1] == tok.eos_id
        spans = [i for i in source if i in sentinels]
        assert spans == sentinels[: len(spans)] and len(spans) >= 1  # one sentinel per dropped span, in order
        assert target[0] == sentinels[0] and target[-2] == sentinels[len(spans)]  # the final sentinel
        pieces, current = {}, None  # the target spells out each span behind its sentinel
        for i in target[:-2]:
            current = i if i in sentinels else current
            pieces.setdefault(current, []).extend([] if i in sentinels else [i])
        rebuilt = [t for i in source[:-1] for t in (pieces[i] if i in sentinels else [i])]
        assert rebuilt == window  # input + target together are exactly the raw window
        noise = len(window) - (len(source) - 1 - len(spans))
        assert noise == round(0.15 * len(window))  # T5's noise density


def test_bart_corpus_rows_are_denoised_and_gpt2_rows_are_causal(bpe_shards):
    task, tok, _, features = bound_task(bpe_shards, "bart", CORPUS_TASKS, "multitask.mixing=equal")
    for window, source, target, _ in corpus_rows(task, features):
        assert target == [tok.bos_id, *window, tok.eos_id]  # the decoder rebuilds the whole window
        assert source[0] == tok.bos_id and source[-1] == tok.eos_id and len(source) <= 48
        assert tok.mask_id in source and source != target  # text infilling left <mask>s
    task, tok, _, features = bound_task(bpe_shards, "gpt2", CORPUS_TASKS, "multitask.mixing=equal")
    for window, ids, labels, dec in corpus_rows(task, features):
        assert dec is None and ids == window and labels == window[1:]  # every next token is a target


def test_mixing_rate_holds_and_batches_are_pure_functions_of_the_index(unigram_shards):
    task, _, records, features = bound_task(unigram_shards, "t5", CORPUS_TASKS, "data.train_limit=60")
    windows = sum(r["task"] == "wiki-leads" for r in records["train"])
    assert windows == 60  # train_limit counts a corpus's windows
    assert task.mixture["wiki-leads"] == pytest.approx(0.5)  # proportional: 60 windows, 60 headlines
    task.mixture = {"news-headlines": 0.75, "wiki-leads": 0.25}
    source = task.train_batches(features, 16, seed=2)
    drawn = [source.batch(i)["tasks"].count("wiki-leads") for i in range(300)]
    n = 300 * 16
    assert abs(sum(drawn) / n - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n), sum(drawn) / n
    again = task.train_batches(features, 16, seed=2)
    for i in (7, 250, 3):  # the same rows, the same masks, in any order
        a, b = source.batch(i), again.batch(i)
        assert a["input_ids"].equal(b["input_ids"]) and a["labels"].equal(b["labels"])
    other = task.train_batches(features, 16, seed=3).batch(7)
    assert not (other["input_ids"].shape == a["input_ids"].shape and other["input_ids"].equal(a["input_ids"]))


def test_member_losses_add_up_to_the_batch_loss(unigram_shards, t5_init):
    task, _, _, features = bound_task(unigram_shards, "t5", CORPUS_TASKS, "multitask.mixing=equal")
    encoder, _, _ = load_encoder(str(t5_init))
    unit = task.build(encoder, []).train()
    batch = task.train_batches(features, 16, seed=0).batch(0)
    torch.manual_seed(0)  # the same dropout masks in both passes
    loss, stats = unit(batch)
    torch.manual_seed(0)
    whole, _ = TextToTextUnit.forward(unit, batch)  # one loss over every row
    assert loss.item() == pytest.approx(whole.item(), rel=1e-5)
    parts = {k: v for k, v in stats.items() if "/" in k}
    assert set(parts) == {"news-headlines/loss", "wiki-leads/loss"}
    assert sum(n for _, n in parts.values()) == stats["loss"][1]
    assert sum(float(s) for s, _ in parts.values()) == pytest.approx(float(stats["loss"][0]), rel=1e-5)


# ---------------------------------------------------------------- runs and errors


@pytest.mark.parametrize("arch", ["t5", "gpt2"])
def test_runs_log_the_corpus_loss_and_score_the_tasks_only(arch, t5_init, bpe_shards, tmp_path):
    init = t5_init if arch == "t5" else tiny_run("gpt2", bpe_shards, tmp_path / "gpt2")
    run = tmp_path / "ft"
    argv = ["finetune", "--task", "multitask", "--init", str(init), "--out", str(run), "train.steps=4"]
    argv += ["train.log_every=1", "train.progress=false", "train.batch_size=8", "task.max_length=48"]
    argv += ["task.max_target_length=8", "data.train_limit=24", "multitask.eval_limit=6", "evals_per_epoch=1"]
    argv += ["multitask.tasks=news-headlines=headline,wiki-leads", "multitask.mixing=equal"]
    assert main(argv) == 0
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["split"] == "train"]
    assert len(train) == 4 and all("news-headlines/loss" in r or "wiki-leads/loss" in r for r in train)
    corpus = [r["wiki-leads/loss"] for r in train if "wiki-leads/loss" in r]
    assert corpus and all(0 < v < 20 for v in corpus)
    test = json.loads((run / "test_metrics.json").read_text())["test"]
    assert "news-headlines/rougeL" in test and not any(k.startswith("wiki-leads") for k in test)
    assert test["average"] == pytest.approx(test["news-headlines/rougeL"])


def test_corpus_errors_are_one_line(t5_init, unigram_shards, tmp_path, capsys):
    with pytest.raises(WarmstartError, match="bert family's MaskedLM has none"):
        corpus_objective(family("bert"), Tokenizer.load(unigram_shards / "tokenizer"), 64)
    base = ["finetune", "--task", "multitask", "--init", str(t5_init), "train.progress=false"]
    base += ["train.steps=1", "data.train_limit=8", "multitask.eval_limit=2"]  # should a case not fail
    cases = [
        (["multitask.tasks=news-headlines,wiki-leads=lm"], "has the prefix 'lm'"),
        (["multitask.tasks=news-headlines,wiki-leads", "task.max_length=2"], "too short for span corruption"),
    ]
    for i, (extra, message) in enumerate(cases):
        out = tmp_path / f"run{i}"
        assert main(base + extra + ["--out", str(out)]) == 2, extra
        err = capsys.readouterr().err.strip()
        assert message in err and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert not out.exists()
