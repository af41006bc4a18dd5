"""`--task multitask` on an encoder: one shared encoder, one head per task (MT-DNN). Mixed one-task batches
(rates, pure function of the index), a tiny BERT run on real classification + tagging + QA data (each head
trained and scored with its own metrics), the shared encoder as a later finetune's init, refusals, resume."""

import csv
import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.cli import assert_one_line_error
from tests.helpers.multitask import FAST, flags
from tests.helpers.runs import Interrupt, stop_at
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import load_finetuned, read_pretrained, saved_task
from warmstart.cli.main import main
from warmstart.commands.finetune import finetune
from warmstart.data.mixing import mixing_rates
from warmstart.errors import WarmstartError
from warmstart.tasks.base import Features
from warmstart.tasks.multitask_heads import HeadsFeatures, HeadsUnit, OneTaskBatches, head_name, problem_of

# ---------------------------------------------------------------- one-task mixed batches

SIZES = {"big": 600, "mid": 150, "small": 40}


class Rows(Features):
    """Made-up features: row k of member j is the token ids [j, k]."""

    def __init__(self, j: int, n: int):
        self.j, self.lengths = j, [2] * n

    def take(self, idx) -> dict:
        return {"input_ids": torch.tensor([[self.j, k] for k in idx])}


def features() -> HeadsFeatures:
    return HeadsFeatures({name: Rows(j, n) for j, (name, n) in enumerate(SIZES.items())})


@pytest.mark.parametrize("mixing", ["proportional", "temperature", "equal"])
def test_each_batch_holds_one_task_drawn_at_its_rate(mixing):
    rates = dict(zip(SIZES, mixing_rates(list(SIZES.values()), mixing, 2.0)))
    batches = OneTaskBatches(features(), 8, 3, rates)
    n = 3000
    drawn = {name: 0 for name in SIZES}
    for i in range(n):
        batch = batches.batch(i)
        ids = batch["input_ids"]
        assert (ids[:, 0] == ids[0, 0]).all() and batch["task"] == list(SIZES)[int(ids[0, 0])]
        drawn[batch["task"]] += 1
    for name, rate in rates.items():  # binomial: 4 standard deviations
        assert abs(drawn[name] / n - rate) < 4 * (rate * (1 - rate) / n) ** 0.5, (name, drawn, rates)


def test_batches_are_a_pure_function_of_the_index_and_cover_each_task_per_pass():
    rates = {"big": 0.2, "mid": 0.3, "small": 0.5}
    one, other = OneTaskBatches(features(), 8, 5, rates), OneTaskBatches(features(), 8, 5, rates)
    order = list(range(300))
    expected = [one.batch(i) for i in order]
    np.random.default_rng(0).shuffle(order)
    for i in order:  # any order, any fresh source: the same batch
        b = other.batch(i)
        assert b["task"] == expected[i]["task"] and b["input_ids"].equal(expected[i]["input_ids"])
    small = [int(k) for b in expected if b["task"] == "small" for k in b["input_ids"][:, 1]]
    assert sorted(small[:40]) == list(range(40))  # every example once before any twice
    seed6 = OneTaskBatches(features(), 8, 6, rates)
    assert [seed6.batch(i)["task"] for i in range(30)] != [b["task"] for b in expected[:30]]


def test_names_and_problems():
    assert head_name("hf:org/data.v2") == "hf_org_data_v2"
    assert problem_of([{"label": "fresh"}, {"label": "rotten"}], "|") == "single_label"
    assert problem_of([{"label": "sports|politics"}], "|") == "multi_label"
    assert problem_of([{"label": "3.8"}, {"label": "1"}], "|") == "regression"
    assert problem_of([{"label": "0"}, {"label": "1"}], "|") == "single_label"
    assert problem_of([{"label": "0"}, {"label": "1"}], "|", "regression") == "regression"


# ---------------------------------------------------------------- a tiny BERT on three kinds of task

# the run itself: tests/tasks/conftest.py's mt_run (tests/helpers/multitask.py)


def test_each_task_is_scored_with_its_own_metric(mt_run):
    metrics = json.loads((mt_run / "test_metrics.json").read_text())
    test = metrics["test"]
    assert metrics["metric"] == "average"
    for key in ("rotten-tomatoes/accuracy", "rotten-tomatoes/macro_f1", "brown-pos-universal/accuracy"):
        assert 0.0 <= test[key] <= 1.0, key
    assert 0.0 <= test["wiki-qa/f1"] <= 100.0 and "wiki-qa/exact_match" in test
    assert not any(
        k.startswith("brown-pos-universal/macro") or k.startswith("wiki-qa/accuracy") for k in test
    )
    mains = [100 * test["rotten-tomatoes/accuracy"], 100 * test["brown-pos-universal/accuracy"]]
    assert test["average"] == pytest.approx((sum(mains) + test["wiki-qa/f1"]) / 3)
    assert metrics["sizes"]["validation"] == 8 + 8 + 8
    saved = json.loads((mt_run / "best" / "config.json").read_text())
    assert saved_task(RunCard.read(saved).task).cfg.null_answers is False  # wiki-qa: every question answered
    logged = [json.loads(x) for x in (mt_run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in logged if r["split"] == "train"]
    for name in ("rotten-tomatoes", "brown-pos-universal", "wiki-qa"):
        assert any(r.get(f"{name}/loss", 0) > 0 for r in train), name  # each member's loss is logged


def test_each_head_is_trained(mt_run, tiny_pretrained):
    best, task, _, labels = load_finetuned(mt_run / "final")
    assert isinstance(best, HeadsUnit) and set(best.heads) == {
        "rotten-tomatoes",
        "brown-pos-universal",
        "wiki-qa",
    }
    assert [json.loads(x)["task"] for x in labels] == ["classification", "tagging", "extractive_qa"]
    torch.manual_seed(0)  # as finetune built the seed-0 unit: the init's encoder, then the heads
    fresh = task.build(read_pretrained(tiny_pretrained).encoder(), labels)
    for name, head in best.heads.items():
        before = fresh.heads[name].state_dict()
        after = head.state_dict()
        assert after and not any(k.startswith("encoder.") for k in after)  # the encoder is stored once
        assert all(not after[k].equal(before[k]) for k in after), name  # every head weight moved
    saved = load_file(str(mt_run / "final" / "model.safetensors"))
    assert {k.split(".")[0] for k in saved} == {"encoder", "heads"}


def test_the_shared_encoder_is_a_later_finetunes_init(mt_run, rt_small, tmp_path):
    saved = load_file(str(mt_run / "final" / "model.safetensors"))
    encoder = read_pretrained(mt_run).encoder().state_dict()
    assert all(encoder[k].equal(saved[f"encoder.{k}"]) for k in encoder)
    out = tmp_path / "single"
    argv = ["finetune", "--init", str(mt_run), "--dataset", str(rt_small), "--out", str(out)]
    assert main(argv + ["train.progress=false", "task.max_length=48", "train.steps=2"]) == 0
    assert "accuracy" in json.loads((out / "test_metrics.json").read_text())["test"]


def test_one_input_at_a_time_is_refused_in_one_line(mt_run, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a fine film\n")
    one_of = "pass --head NAME (one of: rotten-tomatoes, brown-pos-universal, wiki-qa)"
    for argv in (
        ["evaluate", str(mt_run), "--data", "rotten-tomatoes"],
        ["predict", str(mt_run), "--input", str(src)],
    ):
        assert_one_line_error(main(argv), capsys.readouterr().err, "one head per task", one_of)
    for to in ("hf", "onnx"):  # export and serve say the same next step
        argv = ["export", str(mt_run), "--to", to, "--out", str(tmp_path / to)]
        assert_one_line_error(main(argv), capsys.readouterr().err, "one head per task", one_of)
        assert not (tmp_path / to).exists()
    from warmstart.serve.load import open_model

    with pytest.raises(WarmstartError, match=r"one head per task.*pass --head NAME \(one of: rotten"):
        open_model(str(mt_run))


@pytest.mark.parametrize(
    "tasks, needle",
    [
        ("rotten-tomatoes,news-headlines", "news-headlines is a seq2seq dataset, which has no head"),
        ("rotten-tomatoes=sentiment,brown-pos", "gives rotten-tomatoes the prefix 'sentiment'"),
        ("rotten-tomatoes,wiki-leads", "wiki-leads is a corpus dataset"),
        ("rotten-tomatoes,rotten-tomatoes", "listed twice"),
    ],
)
def test_a_bad_mix_is_one_line(tiny_pretrained, tmp_path, capsys, tasks, needle):
    out = tmp_path / "bad"
    argv = ["finetune", "--init", str(tiny_pretrained), "--task", "multitask", "--out", str(out)]
    code = main([*argv, *FAST, f"multitask.tasks={tasks}"])
    assert_one_line_error(code, capsys.readouterr().err, needle)
    assert not out.exists()


def test_a_stopped_run_resumes_to_the_same_weights(tiny_pretrained, tmp_path):
    over = FAST + ["multitask.tasks=rotten-tomatoes,brown-pos-universal", "train.save_every=3"]
    over += ["train.eval_every=4", "task.pooling=mean"]
    finetune(None, flags(tiny_pretrained, tmp_path / "full", steps=8), over)
    with pytest.raises(Interrupt):
        finetune(None, flags(tiny_pretrained, tmp_path / "cut", steps=8), over, hooks=[stop_at(5)])
    finetune(resume=str(tmp_path / "cut"))
    a = load_file(str(tmp_path / "full" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "cut" / "final" / "model.safetensors"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)


def test_multi_label_regression_and_choice_members(tiny_pretrained, wiki_extracts, tmp_path):
    texts = [t[:160] for t in wiki_extracts[:80]]
    tags = [
        [w for w, hit in (("digit", any(c.isdigit() for c in t)), ("comma", "," in t)) if hit] for t in texts
    ]
    files = {"ml.csv": [(t, "|".join(["prose", *g])) for t, g in zip(texts, tags)]}
    files["reg.csv"] = [(t, f"{len(t.split()) / 7:.3f}") for t in texts]
    for name, rows in files.items():
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([("text", "label"), *rows])
    choices = [{"context": t, "choices": [t.split()[-1], "banana"], "label": 0} for t in texts]
    (tmp_path / "mc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in choices))
    listed = ",".join(str(tmp_path / n) for n in ("ml.csv", "reg.csv", "mc.jsonl"))
    out = tmp_path / "run"
    finetune(None, flags(tiny_pretrained, out, steps=4), FAST + [f"multitask.tasks={listed}"])
    test = json.loads((out / "test_metrics.json").read_text())["test"]
    ml, reg, mc = (next(k for k in test if k.startswith(n) and k.endswith(m)) for n, m in
                   (("ml", "/f1"), ("reg", "/pearson"), ("mc", "/accuracy")))  # fmt: skip
    assert test["average"] == pytest.approx(100 * (test[ml] + test[reg] + test[mc]) / 3)
    labels = [json.loads(x) for x in load_finetuned(out)[3]]
    assert [(h["task"], h["problem"]) for h in labels] == [
        ("classification", "multi_label"),
        ("classification", "regression"),
        ("multiple_choice", "single_label"),
    ]
    assert labels[0]["labels"] == ["comma", "digit", "prose"] and labels[1]["labels"] == []
