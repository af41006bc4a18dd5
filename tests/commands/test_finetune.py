"""`warmstart finetune` end to end on real snippets: seeds, strategies, resume, early stopping, bad input."""

import csv
import json
import re
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.helpers.runs import Interrupt
from warmstart.checkpoints.load import load_finetuned
from warmstart.cli.main import main
from warmstart.commands.finetune import finetune
from warmstart.data.catalog import open_dataset

FAST = ["train.progress=false", "task.max_length=48", "train.batch_size=16", "evals_per_epoch=2"]


def args(init, data, out, *extra):
    return [
        "finetune",
        "--init",
        str(init),
        "--dataset",
        str(data),
        "--out",
        str(out),
        "--lr",
        "1e-3",
        *FAST,
        *extra,
    ]


def test_finetune_evaluate_predict(tiny_pretrained, rt_small, tmp_path, capsys):
    run = tmp_path / "rt"
    assert main(args(tiny_pretrained, rt_small, run, "--epochs", "2")) == 0
    out, err = capsys.readouterr()
    # everything trains but BERT's pooler, which cls pooling does not read (no gradient reaches it)
    trainable, total = (
        int(n.replace(",", "")) for n in re.search(r"strategy full: ([\d,]+) of ([\d,]+)", err).groups()
    )
    hidden = round(((1 + 4 * (total - trainable)) ** 0.5 - 1) / 2)
    assert total - trainable == hidden * hidden + hidden  # the pooler's dense layer, weight and bias
    metrics = json.loads((run / "test_metrics.json").read_text())
    assert metrics["sizes"]["train"] + metrics["sizes"]["validation"] + metrics["sizes"]["test"] == 240
    assert f"accuracy {metrics['test']['accuracy']:.4f}" in out
    config = json.loads((run / "best" / "config.json").read_text())
    assert config["id2label"] == {"0": "fresh", "1": "rotten"} and config["architectures"] == [
        "BertForSequenceClassification"
    ]
    # evaluate on the same test split gives the same numbers as the run reported
    assert main(["evaluate", str(run), "--data", str(rt_small), "--out", str(tmp_path / "m.json")]) == 0
    again = json.loads((tmp_path / "m.json").read_text())["metrics"]
    assert again["accuracy"] == pytest.approx(metrics["test"]["accuracy"], abs=1e-6)
    # predict: one JSON line per input line, probabilities sum to one
    src = tmp_path / "in.txt"
    src.write_text('a gripping, beautifully acted film\n\n{"text": "dull and far too long"}\n')
    capsys.readouterr()
    assert main(["predict", str(run), "--input", str(src), "--out", str(tmp_path / "p.jsonl")]) == 0
    preds = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(preds) == 2 and preds[1]["text"] == "dull and far too long"
    said = capsys.readouterr().err
    assert "predicting" in said and "example/s" in said and "2 predictions written" in said  # a rate shown
    assert re.search(r"\d/2 \[", said)  # counted first: the bar has a total and a time left
    table = tmp_path / "in.csv"
    table.write_text('text,id\n"a gripping, beautifully acted film",1\n,2\ndull,3\nfine,4\n')
    assert main(["predict", str(run), "--input", str(table), "--out", str(tmp_path / "t.jsonl")]) == 0
    said = capsys.readouterr().err
    assert re.search(r"\d/3 \[", said) and "3 predictions written" in said  # a row with no text: none
    # texts typed after an option, before and after it: all of them, in order (argparse kept those before)
    capsys.readouterr()
    assert main(["predict", str(run), "one text", "--out", str(tmp_path / "o.jsonl"), "two", "three"]) == 0
    typed = [json.loads(line)["text"] for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert typed == ["one text", "two", "three"]
    with pytest.raises(SystemExit) as exited:
        main(["predict", str(run), "--out", str(tmp_path / "o.jsonl"), "x", "--topk", "2"])
    assert exited.value.code == 2
    assert "unrecognized arguments: x --topk" in capsys.readouterr().err  # a flag among them: still an error
    for p in preds:
        assert p["label"] in ("fresh", "rotten") and sum(p["probabilities"].values()) == pytest.approx(
            1, abs=1e-4
        )


def test_seeds_give_a_summary(tiny_pretrained, rt_small, tmp_path, capsys):
    assert main(args(tiny_pretrained, rt_small, tmp_path / "s", "--seeds", "1,2", "--epochs", "1")) == 0
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    acc = summary["metrics"]["accuracy"]
    seeds = [json.loads((tmp_path / "s" / f"seed-{s}" / "test_metrics.json").read_text()) for s in (1, 2)]
    assert acc["values"] == [s["test"]["accuracy"] for s in seeds]
    assert acc["median"] == pytest.approx(sum(acc["values"]) / 2)
    assert "median" in capsys.readouterr().out
    majority = summary["failed"]["majority_validation"]
    best = [s["best_validation"] for s in seeds]
    assert summary["failed"]["seeds"] == [s for s, b in zip((1, 2), best) if b <= majority]


def test_diverged_seeds_are_counted_as_failed_runs(tiny_pretrained, rt_small, tmp_path, capsys):
    """A learning rate of 1 drives every seed to one class: at or below the majority share, so failed."""
    out = tmp_path / "f"
    argv = args(tiny_pretrained, rt_small, out, "--seeds", "1,2", "--epochs", "1", "train.lr=1")
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    labels = [r["label"] for r in open_dataset(str(rt_small)).records("validation")]
    majority = max(labels.count(x) for x in set(labels)) / len(labels)
    assert 0.5 <= majority < 0.7 and summary["failed"]["majority_validation"] == pytest.approx(majority)
    assert summary["failed"]["seeds"] == [1, 2] and summary["failed"]["count"] == 2
    assert "failed runs" in capsys.readouterr().out and "failed runs" in (out / "summary.md").read_text()


def test_resume_is_bitwise_exact(tiny_pretrained, rt_small, tmp_path):
    flags = {"init": str(tiny_pretrained), "data": {"dataset": str(rt_small)}, "epochs": 2}
    overrides = FAST + ["train.lr=1e-3", "train.save_every=3"]
    full = finetune(None, {**flags, "out": str(tmp_path / "full")}, overrides)

    def stop(step, loss):
        if step == 7:
            raise Interrupt

    with pytest.raises(Interrupt):
        finetune(None, {**flags, "out": str(tmp_path / "cut")}, overrides, hooks=[stop])
    resumed = finetune(resume=str(tmp_path / "cut"))
    a = load_file(str(tmp_path / "full" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "cut" / "final" / "model.safetensors"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
    assert resumed["runs"][0]["test_metrics"]["test"] == full["runs"][0]["test_metrics"]["test"]


def test_early_stopping_stops_when_validation_stalls(tiny_pretrained, rt_small, tmp_path):
    flags = {
        "init": str(tiny_pretrained),
        "data": {"dataset": str(rt_small)},
        "epochs": 5,
        "out": str(tmp_path),
    }
    result = finetune(
        None, flags, FAST + ["train.lr=0", "train.early_stopping=2", "train.eval_at_start=false"]
    )
    run = result["runs"][0]
    assert run["stopped_early"] and run["best_step"] == run["test_metrics"]["steps"] // 3
    assert run["step"] < 5 * 12


def test_lora_run_exports_merged_plain_weights(tiny_pretrained, rt_small, tmp_path, capsys):
    assert main(args(tiny_pretrained, rt_small, tmp_path / "l", "--strategy", "lora", "--epochs", "1")) == 0
    assert "strategy lora:" in capsys.readouterr().err
    step = next((tmp_path / "l" / "checkpoints").iterdir())
    assert any("lora_" in k for k in load_file(str(step / "model.safetensors")))  # resume state: adapters
    best = load_file(str(tmp_path / "l" / "best" / "model.safetensors"))
    assert not any("lora_" in k for k in best) and "encoder.layers.0.attn.qkv.weight" in best
    unit, task, _, labels = load_finetuned(tmp_path / "l")
    assert labels == ["fresh", "rotten"] and task.name == "classification"


def write_csv(path, rows, fields):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


def test_bad_input_is_one_line_and_exit_2(tiny_pretrained, rt_small, tmp_path, capsys):
    rows = list(csv.DictReader(open(rt_small, encoding="utf-8")))
    no_label = write_csv(tmp_path / "nolabel.csv", [{"text": r["text"]} for r in rows], ["text"])
    empty = write_csv(
        tmp_path / "empty.csv", rows[:5] + [{"text": " ", "label": "fresh"}] + rows[5:], ["text", "label"]
    )
    new_label = write_csv(
        tmp_path / "new.csv", rows[:3] + [{"text": "meh", "label": "mixed"}], ["text", "label"]
    )
    cases = [
        (args(tiny_pretrained, no_label, tmp_path / "a"), "is a corpus dataset but task classification"),
        (args(tiny_pretrained, empty, tmp_path / "b"), "line 7 of"),
        (
            args(tiny_pretrained, rt_small, tmp_path / "c", "--text-pair-column", "second"),
            "has no column 'second'",
        ),
        (args(tiny_pretrained, rt_small, tmp_path / "d", "--task", "tagger"), "unknown task 'tagger'"),
        (args(tmp_path / "nowhere", rt_small, tmp_path / "e"), "no model found"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert message in err and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert not Path(argv[6]).exists()  # nothing written for a run that could not start
    run = tmp_path / "ok"
    assert main(args(tiny_pretrained, rt_small, run, "--epochs", "1")) == 0
    capsys.readouterr()
    assert main(["evaluate", str(run), "--data", str(new_label), "--split", "all"]) == 2
    assert "labels the model was not trained on: mixed" in capsys.readouterr().err


def test_evaluations_show_a_bar_with_a_total(tiny_pretrained, rt_small, tmp_path, capsys):
    """Validation and test passes were silent (a minute each on 18,000 rows): each shows its batches out of
    a total, so a time left, beside the steps' bar; train.progress=false hides them with it."""
    shown = args(tiny_pretrained, rt_small, tmp_path / "shown", "train.steps=2", "train.progress=true")
    assert main(shown) == 0
    err = capsys.readouterr().err
    assert "per class" not in err  # counted while testing: no second pass over the test split
    for label in ("validating", "testing"):  # a percentage: the bar knows its total
        assert re.search(rf"{label}: +\d+%\|.*\| \d+/\d+ \[", err), (label, err[-2000:])
    assert main(args(tiny_pretrained, rt_small, tmp_path / "quiet", "train.steps=2")) == 0
    assert "validating" not in capsys.readouterr().err
