"""Multi-task text-to-text finetuning: mixing rates, mixed batches (measured proportions, per-task epoch
order, pure function of the index), to-text conversions of real records, per-task metrics, a tiny T5 run."""

import json
import math

import pytest
import torch

from tests.helpers.shapes import SHAPES
from warmstart.cli.main import main
from warmstart.commands.pretrain import pretrain
from warmstart.data.catalog import open_dataset
from warmstart.data.mixing import MixedBatches, mixing_rates
from warmstart.data.to_text import parse_label_words, to_text
from warmstart.errors import WarmstartError
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.multitask import (
    MultitaskConfig,
    MultitaskTask,
    MultitaskUnit,
    TaggedPairs,
    parse_tasks,
    task_prefix,
)
from warmstart.tasks.text_to_text import TextPairs

# ---------------------------------------------------------------- mixing rates


def test_rates_of_each_mixing_mode_by_hand():
    assert mixing_rates([1000, 100], "proportional") == pytest.approx([1000 / 1100, 100 / 1100])
    assert mixing_rates([1000, 100], "proportional") == pytest.approx([0.9090909, 0.0909091])
    # T = 2: sqrt(1000) / (sqrt(1000) + sqrt(100)) = 31.6228 / 41.6228
    assert mixing_rates([1000, 100], "temperature", 2.0) == pytest.approx([0.7597469, 0.2402531])
    assert mixing_rates([1000, 100], "equal") == [0.5, 0.5]
    assert mixing_rates([1000, 100], "proportional", cap=200) == pytest.approx([200 / 300, 100 / 300])
    assert mixing_rates([1000, 100], "temperature", 1.0) == pytest.approx(mixing_rates([1000, 100]))
    assert mixing_rates([400, 100, 100], "temperature", 2.0) == pytest.approx([0.5, 0.25, 0.25])
    assert mixing_rates([50, 100, 300], "proportional", cap=100) == pytest.approx([0.2, 0.4, 0.4])


def test_bad_mixing_settings_are_clear():
    with pytest.raises(WarmstartError, match="unknown multitask.mixing 'random'"):
        mixing_rates([10, 10], "random")
    with pytest.raises(WarmstartError, match="temperature"):
        MultitaskConfig(mixing="temperature", temperature=0.0)
    with pytest.raises(WarmstartError, match="no tasks to mix"):
        mixing_rates([], "equal")


def test_task_specs_and_prefixes():
    assert parse_tasks(["news-headlines=headline", "rotten-tomatoes", "wiki-qa="]) == [
        ("news-headlines", "headline"),
        ("rotten-tomatoes", None),
        ("wiki-qa", ""),
    ]
    assert [task_prefix(p) for p in ("headline", "summarize:", " ", "translate English to German")] == [
        "headline: ",
        "summarize: ",
        "",
        "translate English to German: ",
    ]
    with pytest.raises(WarmstartError, match="multitask has no tasks"):
        parse_tasks([])


# ---------------------------------------------------------------- mixed training batches

SIZES = {"big": 600, "mid": 150, "small": 40}


def fake_features(sizes=SIZES) -> TaggedPairs:
    """Tagged text pairs of made-up token ids: row k of task j has source [j + 3, k + 3]."""
    sources, targets, tasks = [], [], []
    for j, (name, n) in enumerate(sizes.items()):
        for k in range(n):
            sources.append([j + 3, k + 3, 1])
            targets.append([k % 7 + 3, 1])
            tasks.append(name)
    pairs = TextPairs(sources, targets, [str(t) for t in targets], 0, 0, "t5")
    return TaggedPairs(pairs, tasks, ["text"] * len(tasks), [[r] for r in pairs.refs])


@pytest.mark.parametrize("mixing", ["proportional", "temperature", "equal"])
def test_measured_mixing_proportions_match_the_rates(mixing):
    features = fake_features()
    rates = mixing_rates(list(SIZES.values()), mixing, 2.0)
    source = MixedBatches(features, 32, seed=3, mixture=dict(zip(SIZES, rates)))
    batches = 500
    counts = [0] * len(SIZES)
    for i in range(batches):
        rows = source.batch(i)["tasks"]
        for j, name in enumerate(SIZES):
            counts[j] += rows.count(name)
    n = batches * 32
    assert sum(counts) == n
    for j, rate in enumerate(rates):  # a binomial count: within 4 standard deviations
        assert abs(counts[j] / n - rate) < 4 * math.sqrt(rate * (1 - rate) / n), (mixing, counts, rates)


def test_within_a_task_every_example_comes_once_before_any_comes_twice():
    features = fake_features()
    source = MixedBatches(features, 16, seed=0, mixture={"big": 0.2, "mid": 0.3, "small": 0.5})
    drawn = {j: [] for j in range(3)}
    for i in range(60):
        for j, row in source.draws(i):
            drawn[j].append(row)
    for j, name in enumerate(SIZES):
        rows = [k for k, t in enumerate(features.tasks) if t == name]
        n = len(rows)
        passes = len(drawn[j]) // n
        assert passes >= 1 or j == 0
        for p in range(passes):
            assert sorted(drawn[j][p * n : (p + 1) * n]) == rows
        assert len(set(drawn[j][passes * n :])) == len(drawn[j][passes * n :])
    assert drawn[2][:40] != drawn[2][40:80]  # a fresh permutation every pass


def test_batch_i_is_a_pure_function_of_i():
    features = fake_features()
    mixture = dict(zip(SIZES, mixing_rates(list(SIZES.values()), "temperature")))
    walked = MixedBatches(features, 8, seed=5, mixture=mixture)
    sequential = [walked.draws(i) for i in range(1100)]  # past one STRIDE of kept counts
    fresh = MixedBatches(features, 8, seed=5, mixture=mixture)
    for i in (1099, 1030, 3, 1024, 0, 700):  # straight to a late batch, then back and forth
        assert fresh.draws(i) == sequential[i], i
    a, b = walked.batch(1050), fresh.batch(1050)
    assert (
        a["tasks"] == b["tasks"] and a["input_ids"].equal(b["input_ids"]) and a["labels"].equal(b["labels"])
    )
    assert len(set(a["tasks"])) >= 2  # rows of several tasks, padded together
    other = MixedBatches(features, 8, seed=6, mixture=mixture)
    assert [other.draws(i) for i in range(5)] != sequential[:5]
    assert walked.position(walked.batches_per_epoch + 2) == (1, 2)
    assert walked.batches_per_epoch == math.ceil(sum(SIZES.values()) / 8)


# ---------------------------------------------------------------- records as text pairs


def test_to_text_on_real_records():
    qa = next(open_dataset("wiki-qa").records("train"))
    assert qa["question"] == "What is Academic art?"
    (pair,) = to_text([qa], "qa")
    assert pair["text"] == "What is Academic art? \n " + qa["context"]
    assert pair["text"].startswith("What is Academic art? \n Academic art, academicism, or academism, is a")
    assert pair["target"] == "style of painting and sculpture" and pair["answers"] == [pair["target"]]
    unanswerable = {**qa, "answers": []}
    assert to_text([unanswerable], "qa")[0]["target"] == "no answer"

    review = next(open_dataset("rotten-tomatoes").records("train"))
    assert review == {"text": "A three-hour cinema master class.", "label": "fresh"}
    assert to_text([review], "labeled") == [{"text": "A three-hour cinema master class.", "target": "fresh"}]
    mapped = to_text([review, {**review, "label": "rotten"}], "labeled", "fresh: positive, rotten: negative")
    assert [p["target"] for p in mapped] == ["positive", "negative"]
    assert parse_label_words(["fresh=positive", "rotten=negative"]) == {
        "fresh": "positive",
        "rotten": "negative",
    }

    choice = {
        "text": "Members of the procession walk down the street holding small horn brass instruments.",
        "choices": ["A drum line passes by.", "A marching band plays.", "The crowd sits in silence."],
        "label": "1",
    }
    assert to_text([choice], "choice") == [
        {
            "text": "Members of the procession walk down the street holding small horn brass instruments. \n "
            "(A) A drum line passes by. (B) A marching band plays. (C) The crowd sits in silence.",
            "target": "A marching band plays.",
        }
    ]


def test_to_text_pairs_yes_no_and_errors():
    pair = {"text": "A man is playing a guitar.", "text_pair": "A person plays music.", "label": "entailment"}
    assert to_text([pair], "labeled") == [
        {"text": "A man is playing a guitar. \n A person plays music.", "target": "entailment"}
    ]
    yes_no = [{"text": "Is the sky blue?", "label": "True"}, {"text": "Is fire cold?", "label": "false"}]
    assert [p["target"] for p in to_text(yes_no, "labeled")] == ["yes", "no"]
    assert [p["target"] for p in to_text([{"text": "x", "label": b} for b in (True, False)], "labeled")] == [
        "yes",
        "no",
    ]
    assert to_text([{"text": "x", "label": ["b", "a"]}], "labeled")[0]["target"] == "b, a"
    headline = {"text": "Stocks fell sharply on Monday.", "target": "Stocks fall"}
    assert to_text([headline], "seq2seq") == [headline]
    with pytest.raises(WarmstartError, match="tagging dataset, which has no text-to-text form"):
        to_text([{"text": "a b", "tokens": ["a", "b"], "tags": ["O", "O"]}], "tagging")
    with pytest.raises(WarmstartError, match="not the index of one of its choices"):
        to_text([{"text": "c", "choices": ["a", "b"], "label": "2"}], "choice")
    with pytest.raises(WarmstartError, match="cannot read the label word"):
        parse_label_words("fresh positive")


# ---------------------------------------------------------------- per-task metrics


def test_summary_per_task_and_average():
    means = {
        "loss": 2.0,
        "accuracy": 0.4,  # token accuracy, overall
        "rotten-tomatoes/accuracy": 0.75,
        "rotten-tomatoes/loss": 1.5,
        "wiki-qa/exact_match": 0.5,
        "wiki-qa/f1": 0.6,
        "news-headlines/rougeL": 30.0,
        "news-headlines/bleu_sys_len_sum": 10.0,
        "news-headlines/bleu_ref_len_sum": 10.0,
        **{f"news-headlines/bleu_correct{n}_sum": 10.0 - n for n in range(1, 5)},
        **{f"news-headlines/bleu_total{n}_sum": 10.0 - n for n in range(1, 5)},
    }
    out = MultitaskUnit.summarize(means)
    assert out["news-headlines/bleu"] == pytest.approx(100.0)
    assert not any("bleu_" in k for k in out)
    assert out["wiki-qa/f1"] == pytest.approx(60.0) and out["wiki-qa/exact_match"] == pytest.approx(50.0)
    assert out["average"] == pytest.approx((75.0 + 60.0 + 30.0) / 3)
    assert out["perplexity"] == pytest.approx(math.exp(2.0))


class FakeSeq2Seq(torch.nn.Module):
    """Stands in for a T5: hidden states from the decoder ids, logits from a linear layer."""

    def __init__(self):
        super().__init__()
        self.emb, self.out = torch.nn.Embedding(50, 8), torch.nn.Linear(8, 50)

    def forward(self, ids, mask, decoder_ids, decoder_mask):
        return self.emb(decoder_ids)

    def lm_logits(self, hidden):
        return self.out(hidden)


def test_evaluation_scores_each_task_on_its_own_rows():
    task = MultitaskTask(TaskConfig(name="multitask"))
    task.model_type, task.decoder_only = "t5", False
    unit = task.build(FakeSeq2Seq(), []).eval()
    pairs = TextPairs(
        [[3, 1]] * 6, [[4, 1]] * 6, ["positive", "negative", "positive"] + ["x"] * 3, 0, 0, False
    )
    tags = ["rt", "rt", "rt", "qa", "qa", None]
    golds = [["positive"], ["negative"], ["positive"], ["the film genre", "genre"], ["no answer"], ["x"]]
    features = TaggedPairs(pairs, tags, ["label"] * 3 + ["answer"] * 2 + ["text"], golds)
    generated = ["Positive", "positive", "positive", "genre", "film", "x"]
    unit.generate = lambda sources: generated[: len(sources)]
    _, stats = unit(features.take(range(6)))
    assert stats["rt/accuracy"] == (2.0, 3)  # exact match after SQuAD normalisation (case)
    assert stats["qa/exact_match"] == (1.0, 2) and stats["qa/f1"] == (1.0, 2)
    assert stats["rouge1"][1] == 1 and stats["rouge1"][0] == pytest.approx(100.0)  # the untagged row
    assert {"rt/loss", "qa/loss", "loss"} <= set(stats) and "rt/rougeL" not in stats
    summary = MultitaskUnit.summarize(  # as the evaluation does: means, totals for *_sum
        {k: float(v) if k.endswith("_sum") else float(v) / n for k, (v, n) in stats.items()}
    )
    assert summary["average"] == pytest.approx((100 * 2 / 3 + 50.0) / 2)


# ---------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def t5_init(unigram_shards, tmp_path_factory):
    out = tmp_path_factory.mktemp("multitask") / "pre"
    flags = {"out": str(out), "arch": "t5", "data": {"shards": str(unigram_shards)}, "train": {"steps": 6}}
    extra = ["data.seq_len=64", "train.batch_size=8", "train.progress=false", "train.save_every=0"]
    pretrain(None, None, flags, SHAPES["t5"] + extra + ["train.eval_every=0", "train.eval_batches=1"])
    return out


BASE = ["finetune", "--task", "multitask", "train.progress=false", "train.batch_size=8"]
BASE += ["task.max_length=48", "task.max_target_length=8", "data.train_limit=24", "multitask.eval_limit=6"]


def test_two_task_run_reports_both_tasks(t5_init, tmp_path, capsys):
    run = tmp_path / "ft"
    argv = BASE + ["--init", str(t5_init), "--out", str(run), "train.steps=4", "evals_per_epoch=1"]
    argv += [
        "multitask.tasks=news-headlines=headline,rotten-tomatoes=sentiment",
        "multitask.mixing=temperature",
    ]
    argv += ["multitask.label_words=fresh=positive,rotten=negative"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "multitask, temperature mixing: news-headlines (24 examples) 0.500, rotten-tomatoes" in err
    metrics = json.loads((run / "test_metrics.json").read_text())
    test = metrics["test"]
    for key in ("rouge1", "rouge2", "rougeL", "bleu", "loss"):
        assert f"news-headlines/{key}" in test, key
    assert 0.0 <= test["rotten-tomatoes/accuracy"] <= 1.0 and "rotten-tomatoes/loss" in test
    assert not any(k.startswith("rotten-tomatoes/rouge") for k in test)
    assert test["average"] == pytest.approx(
        (100 * test["rotten-tomatoes/accuracy"] + test["news-headlines/rougeL"]) / 2
    )
    assert metrics["metric"] == "average" and metrics["sizes"] == {"train": 48, "validation": 12, "test": 12}
    assert metrics["steps"] == 4
    config = json.loads((run / "best" / "config.json").read_text())
    assert config["warmstart"]["task"]["name"] == "multitask"
    src = tmp_path / "in.txt"
    src.write_text("sentiment: A three-hour cinema master class.\nheadline: Stocks fell sharply on Monday.\n")
    capsys.readouterr()
    assert main(["predict", str(run), "--input", str(src)]) == 0
    preds = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [p["text"] for p in preds] == src.read_text().splitlines()
    assert all(isinstance(p["generated"], str) for p in preds)


def test_bad_input_is_one_line_and_exit_2(t5_init, tmp_path, capsys):
    tasks = "multitask.tasks=news-headlines=headline,rotten-tomatoes=sentiment"
    cases = [
        ([tasks, "multitask.mixing=random"], "unknown multitask.mixing 'random'"),
        (["multitask.tasks=news-headlines=headline,rotten-potatoes"], "unknown dataset 'rotten-potatoes'"),
        ([], "multitask has no tasks"),
        ([tasks, "--dataset", "news-headlines"], "not from --dataset"),
        (["multitask.tasks=news-headlines,news-headlines=title"], "listed twice"),
    ]
    for i, (extra, message) in enumerate(cases):
        out = tmp_path / f"run{i}"
        assert main(BASE + ["--init", str(t5_init), "--out", str(out)] + extra) == 2, extra
        err = capsys.readouterr().err.strip()
        assert message in err and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert not out.exists()
