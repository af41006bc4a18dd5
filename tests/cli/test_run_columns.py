"""A run reads its users' files with the column names it was finetuned with (its card keeps them):
`warmstart evaluate RUN --test-file F` for a run, its ONNX export and a sentence-pair run (a flag given still
wins), and `predict` / ``Model.predict`` for JSON objects keyed by those names."""

import csv
import json
import re

import pytest

from tests.helpers.cli import assert_one_line_error, run

FAST = [
    "train.progress=false",
    "task.max_length=32",
    "train.batch_size=16",
    "evals_per_epoch=2",
    "--epochs",
    "1",
]


def _write(path, rows, names):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(names)
        writer.writerows(rows)
    return path


@pytest.fixture
def own(rt_small, tmp_path):
    """train.csv / test.csv (200 / 40 real snippets) with columns body,verdict, and their pair versions
    (first,second,gold: the snippet and the next one, labelled by the first)."""
    rows = [(r["text"], r["label"]) for r in csv.DictReader(open(rt_small, encoding="utf-8"))]
    pairs = [(a, b, label) for (a, label), (b, _) in zip(rows, rows[1:] + rows[:1], strict=True)]
    out = {}
    for name, part in (("train", slice(0, 200)), ("test", slice(200, 240))):
        out[name] = _write(tmp_path / f"{name}.csv", rows[part], ["body", "verdict"])
        out[f"pair_{name}"] = _write(tmp_path / f"pair_{name}.csv", pairs[part], ["first", "second", "gold"])
    return out


def _evaluated(capsys, tmp_path, *argv) -> dict:
    code, _, err = run(capsys, "evaluate", *argv, "--out", tmp_path / "m.json")
    assert code == 0, err
    return json.loads((tmp_path / "m.json").read_text())["metrics"]


def test_evaluate_reads_the_columns_the_run_was_finetuned_with(tiny_pretrained, own, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["finetune", "--init", tiny_pretrained, "--train-file", own["train"], "--test-file", own["test"]]
    code, _, err = run(
        capsys, *argv, "--text-column", "body", "--label-column", "verdict", "--out", out, *FAST
    )
    assert code == 0, err
    assert re.search(r"task.max_length=32 cuts \d+ of \d+ training texts", err)  # said before training
    card = json.loads((out / "best" / "config.json").read_text())["warmstart"]
    assert card["columns"] == {"text": "body", "label": "verdict"}
    reported = json.loads((out / "test_metrics.json").read_text())["test"]["accuracy"]
    assert _evaluated(capsys, tmp_path, out, "--test-file", own["test"])["accuracy"] == pytest.approx(
        reported
    )
    # the ONNX export carries the card: the same file, no flags, the same answers
    code, _, err = run(capsys, "export", out, "--to", "onnx", "--out", tmp_path / "onnx")
    assert code == 0, err
    got = _evaluated(capsys, tmp_path, tmp_path / "onnx", "--test-file", own["test"])
    assert got["accuracy"] == pytest.approx(reported)
    # predict: JSON lines keyed by the run's own names, through the CLI and the Python API
    lines = tmp_path / "in.jsonl"
    texts = [r[0] for r in csv.reader(open(own["test"], encoding="utf-8"))][1:4]
    lines.write_text("".join(json.dumps({"body": t, "id": i}) + "\n" for i, t in enumerate(texts)))
    code, stdout, err = run(capsys, "predict", tmp_path / "onnx", "--input", lines)
    assert code == 0, err
    assert [json.loads(x)["text"] for x in stdout.splitlines()] == texts
    import warmstart

    assert [p["label"] for p in warmstart.load(out).predict([{"body": t} for t in texts])] == [
        json.loads(x)["label"] for x in stdout.splitlines()
    ]
    # a CSV is read by column (its header is not a text to classify), the run's column unless named
    code, stdout, err = run(capsys, "predict", tmp_path / "onnx", "--input", own["test"])
    assert code == 0, err
    rows = list(csv.DictReader(open(own["test"], encoding="utf-8")))
    assert [json.loads(x)["text"] for x in stdout.splitlines()] == [r["body"] for r in rows]
    code, stdout, err = run(capsys, "predict", out, "--input", own["test"], "--text-column", "verdict")
    assert code == 0 and [json.loads(x)["text"] for x in stdout.splitlines()] == [r["verdict"] for r in rows]
    code, _, err = run(capsys, "predict", out, "--input", own["pair_test"])
    assert_one_line_error(code, err, "no column 'body' (columns: first, second, gold)", "--text-column")
    # a DataFrame is rows (iterating it gives its column names): each row predicted, by the run's names
    import pandas as pd

    frame = pd.DataFrame({"body": texts, "verdict": ["x"] * len(texts)})
    by_rows = warmstart.load(out).predict(frame)
    assert len(by_rows) == len(texts) and by_rows == warmstart.load(out).predict([{"body": t} for t in texts])
    with pytest.raises(warmstart.WarmstartError, match=r"texts is a table \(columns: body, verdict\)"):
        warmstart.load(out).encode(frame)
    lines.write_text(json.dumps({"review": texts[0]}) + "\n")
    code, _, err = run(capsys, "predict", out, "--input", lines)
    assert_one_line_error(code, err, "input line 1 has no key 'text' or 'body' (its keys: review)")
    # --data FILE (one file, no splits of its own): its carved test split is scored, and said
    code, stdout, err = run(capsys, "evaluate", out, "--data", own["test"])
    assert code == 0, err
    carved = int(re.search(r"\(test, (\d+) examples\)", stdout)[1])
    assert 0 < carved < 40
    said = (
        f"has no splits of its own: scored its test split, carved by hash as finetuning on it would ({carved}"
    )
    assert said in err and " of 40 rows); --test-file" in err
    code, _, err = run(capsys, "evaluate", out, "--data", own["test"], "--split", "test")
    assert code == 0 and "no splits of its own" not in err
    # a flag given wins over the card: here a column the file lacks, said in one line with the columns
    code, _, err = run(capsys, "evaluate", out, "--test-file", own["test"], "--text-column", "text")
    assert_one_line_error(code, err, "no column 'text'", "body, verdict")


def test_a_pair_run_evaluates_as_pairs(tiny_pretrained, own, tmp_path, capsys):
    out = tmp_path / "pairs"
    argv = ["finetune", "--init", tiny_pretrained, "--train-file", own["pair_train"], "--out", out]
    flags = ["--text-column", "first", "--text-pair-column", "second", "--label-column", "gold"]
    code, _, err = run(capsys, *argv, "--test-file", own["pair_test"], *flags, *FAST)
    assert code == 0, err
    reported = json.loads((out / "test_metrics.json").read_text())["test"]["accuracy"]
    got = _evaluated(capsys, tmp_path, out, "--test-file", own["pair_test"])
    assert got["accuracy"] == pytest.approx(reported)
    # a file without the second text is not scored as single texts
    code, _, err = run(capsys, "evaluate", out, "--test-file", own["test"])
    assert_one_line_error(code, err, "no column", "body, verdict")
