"""Text-to-text finetuning: metrics equal the reference libraries, batches are formatted per family, and
T5 / BART / GPT-2 runs finetune, evaluate by generation and predict through the CLI."""

import csv
import json

import pytest
import torch

from tests.helpers.shapes import SHAPES
from warmstart.cli.main import main
from warmstart.commands.pretrain import pretrain
from warmstart.data.catalog import open_dataset
from warmstart.objectives.lm_loss import IGNORE
from warmstart.registry import family_of
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.text_metrics import text_stats, with_bleu
from warmstart.tasks.text_to_text import TextToTextTask
from warmstart.tokenization.tokenizer import Tokenizer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def headlines():
    """60 real (article, title) pairs from news-headlines, articles cut to 300 characters."""
    rows = []
    for r in open_dataset("news-headlines").records("train"):
        rows.append({"text": r["text"][:300], "target": r["target"]})
        if len(rows) == 60:
            return rows


def totals(stats):
    return {k: s if k.endswith("_sum") else s / n for k, (s, n) in stats.items()}


def test_rouge_and_bleu_equal_the_reference_libraries(headlines):
    sacrebleu = pytest.importorskip("sacrebleu")
    from rouge_score import rouge_scorer

    refs = [r["target"] for r in headlines]
    preds = [" ".join(r["text"].split()[:8]) for r in headlines]  # a lead-8 baseline headline
    half = len(preds) // 2  # two batches, added up as the evaluation does
    a, b = text_stats(preds[:half], refs[:half]), text_stats(preds[half:], refs[half:])
    summed = {k: (a[k][0] + b[k][0], a[k][1] + b[k][1]) for k in a}
    ours = with_bleu(totals(summed))
    assert ours["bleu"] == pytest.approx(sacrebleu.corpus_bleu(preds, [refs]).score, abs=1e-9)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for name in ("rouge1", "rouge2", "rougeL"):
        expected = 100 * sum(scorer.score(r, p)[name].fmeasure for r, p in zip(refs, preds)) / len(refs)
        assert ours[name] == pytest.approx(expected)
    assert 0 < ours["bleu"] < 100 and 0 < ours["rouge1"] < 100


def encoded(shards, model_type, records, **task):
    tok = Tokenizer.load(shards / "tokenizer")
    t = TextToTextTask(TaskConfig(name="text_to_text", prefix="headline: ", **task))
    start = {"t5": tok.pad_id, "bart": tok.eos_id}.get(model_type)
    config_json = {"model_type": model_type, "decoder_start_token_id": start}
    t.bind(tok, config_json, family_of(config_json))
    return tok, t.encode(records, tok, [], "test").take(range(len(records)))


def test_t5_batch_teacher_forcing(unigram_shards, headlines):
    tok, batch = encoded(unigram_shards, "t5", headlines[:4], max_length=40, max_target_length=12)
    assert batch["input_ids"].shape[1] <= 40 and batch["labels"].shape[1] <= 12
    first = batch["sources"][0]
    assert first[-1] == tok.eos_id and tok.decode(first).startswith("headline:")
    real = batch["labels"] != IGNORE
    assert torch.equal(batch["decoder_input_ids"][:, 0], torch.full((4,), tok.pad_id))  # T5 starts with pad
    shifted = batch["decoder_input_ids"][:, 1:][real[:, :-1]]
    assert torch.equal(shifted, batch["labels"][:, :-1][real[:, :-1]])
    ends = batch["labels"].gather(1, real.sum(1, keepdim=True) - 1).squeeze(1)
    assert (ends == tok.eos_id).all()


def test_bart_targets_start_with_bos_and_decoder_with_eos(bpe_shards, headlines):
    tok, batch = encoded(bpe_shards, "bart", headlines[:3])
    assert (batch["labels"][:, 0] == tok.bos_id).all()
    assert (batch["decoder_input_ids"][:, 0] == tok.eos_id).all()
    assert batch["sources"][0][0] == tok.bos_id and batch["sources"][0][-1] == tok.eos_id


def test_decoder_loss_is_on_the_completion_only(bpe_shards, headlines):
    tok, batch = encoded(bpe_shards, "gpt2", headlines[:3], max_length=80, max_target_length=16)
    for i, source in enumerate(batch["sources"]):
        labels = batch["labels"][i]
        assert (labels[: len(source)] == IGNORE).all()
        completion = labels[len(source) :][labels[len(source) :] != IGNORE].tolist()
        assert completion == batch["input_ids"][i, len(source) : len(source) + len(completion)].tolist()
        assert completion[-1] == tok.eos_id
        assert tok.decode(completion).strip() == tok.decode(tok.encode(headlines[i]["target"])[:14]).strip()


@pytest.fixture(scope="module")
def pairs_csv(headlines, tmp_path_factory):
    path = tmp_path_factory.mktemp("pairs") / "headlines.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["text", "target"])
        writer.writeheader()
        writer.writerows(headlines)
    return path


def tiny_run(arch, shards, out):
    flags = {"out": str(out), "arch": arch, "data": {"shards": str(shards)}, "train": {"steps": 6}}
    extra = ["data.seq_len=64", "train.batch_size=8", "train.progress=false", "train.save_every=0"]
    pretrain(None, None, flags, SHAPES[arch] + extra + ["train.eval_every=0", "train.eval_batches=1"])
    return out


@pytest.mark.parametrize("arch", ["t5", "bart", "gpt2"])
def test_finetune_evaluate_predict(arch, unigram_shards, bpe_shards, pairs_csv, tmp_path, capsys):
    init = tiny_run(arch, unigram_shards if arch == "t5" else bpe_shards, tmp_path / "pre")
    run = tmp_path / "ft"
    argv = ["finetune", "--task", "text_to_text", "--init", str(init), "--dataset", str(pairs_csv)]
    argv += ["--out", str(run), "--epochs", "1", "train.progress=false", "train.batch_size=8"]
    argv += ["task.max_length=60", "task.max_target_length=8", "task.prefix=headline: ", "evals_per_epoch=1"]
    assert main(argv) == 0
    test = json.loads((run / "test_metrics.json").read_text())
    assert {"rouge1", "rouge2", "rougeL", "bleu", "loss", "perplexity"} <= set(test["test"])
    assert test["metric"] == "rougeL"
    # rows without choices: the teacher-forced accuracy is per token, named so (it read as the rows')
    assert "token_accuracy" in test["test"] and "accuracy" not in test["test"]
    config = json.loads((run / "best" / "config.json").read_text())
    assert config["warmstart"]["task"]["prefix"] == "headline: "
    src = tmp_path / "in.txt"
    src.write_text("The senate voted on the bill today.\nStocks fell sharply on Monday.\n")
    capsys.readouterr()
    assert main(["predict", str(run), "--input", str(src)]) == 0
    preds = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [p["text"] for p in preds] == src.read_text().splitlines()
    assert all(isinstance(p["generated"], str) for p in preds)
    # evaluate on the (text, target) file with no column flags: the run's card says what it read
    assert main(["evaluate", str(run), "--data", str(pairs_csv)]) == 0
    assert "rougeL" in capsys.readouterr().out


def test_bad_input_is_one_line_and_exit_2(
    tiny_pretrained, unigram_shards, pairs_csv, headlines, tmp_path, capsys
):
    init = tiny_run("t5", unigram_shards, tmp_path / "pre")
    empty = tmp_path / "empty.csv"
    with open(empty, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["text", "target"])
        writer.writeheader()
        writer.writerows(headlines[:30] + [{"text": "an article", "target": " "}] + headlines[30:])
    base = ["finetune", "--task", "text_to_text", "train.progress=false"]
    cases = [
        (["--init", str(tiny_pretrained), "--dataset", str(pairs_csv)], "needs a model that writes text"),
        (["--init", str(init), "--dataset", str(empty)], "has no value for column 'target'"),
        (["--init", str(init), "--dataset", str(pairs_csv), "strategy.strategy=frozen"], "trains the whole"),
        (["--init", str(init), "--dataset", "wiki-leads"], "is a corpus dataset but task text_to_text needs"),
    ]
    for i, (extra, message) in enumerate(cases):
        out = tmp_path / f"run{i}"
        assert main(base + extra + ["--out", str(out)]) == 2, extra
        err = capsys.readouterr().err.strip()
        assert message in err and err.startswith("error: ") and len(err.splitlines()) == 1, err
