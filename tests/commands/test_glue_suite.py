"""`warmstart evaluate-suite glue`: the GLUE tasks read from glue_data/ in the original TSV layout, each
finetuned from a tiny pretrained run and scored with its official metric; the table and its average."""

import csv
import json
import socket

import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from tests.helpers.cli import assert_one_line_error, run
from warmstart.data.glue import TASKS, read_task
from warmstart.tasks.glue_metrics import mcc, spearman

MNLI = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
        "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1"]  # fmt: skip
NLI = ("entailment", "neutral", "contradiction")


def _snippets(rt_small):
    with open(rt_small, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [(" ".join(r["text"].replace('"', "'").split()), r["label"] == "fresh") for r in rows]


def _rows(task, i, text, pair, good):
    """One TSV row of ``task`` in its original column layout."""
    label = "1" if good else "0"
    return {
        "cola": ["gj04", label, "" if good else "*", text],
        "sst2": [text, label],
        "mrpc": [label, str(1000 + i), str(2000 + i), text, pair],
        "stsb": [str(i), "main-captions", "MSRvid", "2012test", str(i), "none", "none", text, pair,
                 f"{(4.2 if good else 0.8) + (i % 5) / 10:.3f}"],
        "qqp": [str(i), str(2 * i), str(2 * i + 1), text, pair, label],
        "mnli": [str(i), str(i), f"{i}e", "fiction", "( x )", "( y )", "(ROOT x)", "(ROOT y)", text, pair,
                 NLI[i % 3], NLI[i % 3]],
        "qnli": [str(i), text, pair, "entailment" if good else "not_entailment"],
        "rte": [str(i), text, pair, "entailment" if good else "not_entailment"],
        "wnli": [str(i), text, pair, label],
    }[task]  # fmt: skip


HEADERS = {
    "sst2": ["sentence", "label"],
    "mrpc": ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
    "stsb": ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
             "sentence2", "score"],
    "qqp": ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
    "mnli": MNLI + ["gold_label"],
    "qnli": ["index", "question", "sentence", "label"],
    "rte": ["index", "sentence1", "sentence2", "label"],
    "wnli": ["index", "sentence1", "sentence2", "label"],
}  # fmt: skip


def write_glue(root, snippets, train=40, dev=16):
    """glue_data/ with every task's train and dev TSVs (MNLI: dev_matched, dev_mismatched)."""
    for name, task in TASKS.items():
        folder = root / task.folder
        folder.mkdir(parents=True)
        for file, start, count in [("train", 0, train)] + [(d, train + k * dev, dev) for k, (d, _) in
                                                            enumerate(task.dev)]:  # fmt: skip
            lines = []
            if name in HEADERS:
                header = HEADERS[name]
                if name == "mnli" and file != "train":  # dev: five annotators' labels
                    header = MNLI + ["label2", "label3", "label4", "label5", "gold_label"]
                lines.append(header)
            for i in range(start, start + count):
                text, good = snippets[i]
                row = _rows(name, i, text, snippets[-1 - i][0], good)
                if name == "mnli" and file != "train":
                    row = row[:-1] + [row[-1]] * 4 + [row[-1]]
                lines.append(row)
            (folder / f"{file}.tsv").write_text("".join("\t".join(r) + "\n" for r in lines), encoding="utf-8")
    return root


@pytest.fixture
def glue_dir(rt_small, tmp_path):
    return write_glue(tmp_path / "glue_data", _snippets(rt_small))


def test_every_task_is_read_from_its_original_layout(glue_dir):
    for name, task in TASKS.items():
        data = read_task(str(glue_dir), name)
        assert set(data) == {"train", *(d for d, _ in task.dev)}
        assert len(data["train"]) == 40 and all(len(data[d]) == 16 for d, _ in task.dev)
        first = data["train"][0]
        assert ("text_pair" in first) == (task.pair is not None)
        if name == "stsb":
            assert isinstance(first["label"], float)
    cola = read_task(str(glue_dir), "cola")["train"]
    assert {r["label"] for r in cola} == {"0", "1"}
    assert not any(r["text"] in ("", "*") for r in cola)  # the 4th column, not the judgment marker
    assert read_task(str(glue_dir), "mnli")["dev_mismatched"][0]["label"] in NLI


def test_metrics_match_the_reference_implementations():
    gold = list("0110101100")
    pred = list("0100111101")
    assert mcc(gold, pred) == pytest.approx(matthews_corrcoef(gold, pred))
    three = ["a", "b", "c", "a", "b", "c", "a"]
    assert mcc(three, ["a", "b", "b", "a", "c", "c", "b"]) == pytest.approx(
        matthews_corrcoef(three, ["a", "b", "b", "a", "c", "c", "b"])
    )
    x, y = [1.0, 2.0, 2.0, 3.5, 0.2, 4.0], [0.5, 2.5, 1.0, 3.0, 0.1, 5.0]
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)


def test_glue_suite_scores_each_task_with_its_official_metric(glue_dir, tiny_pretrained, tmp_path, capsys):
    out = tmp_path / "suite"
    code, stdout, err = run(capsys, "evaluate-suite", "glue", "--init", tiny_pretrained,
                            "--glue-dir", glue_dir, "--tasks", "cola,mrpc,stsb,mnli", "--max-steps", 3,
                            "--batch-size", 8, "--out", out)  # fmt: skip
    assert code == 0, err
    suite = json.loads((out / "suite.json").read_text())
    tasks = suite["tasks"]
    assert list(tasks) == ["cola", "mrpc", "stsb", "mnli"]

    def predictions(name):
        rows = [json.loads(line) for line in (out / "predictions" / f"{name}.jsonl").read_text().splitlines()]
        return [r["gold"] for r in rows], [r["predicted"] for r in rows]

    gold, pred = predictions("cola-dev")
    assert len(gold) == 16
    assert tasks["cola"]["dev"]["dev"] == {"mcc": pytest.approx(matthews_corrcoef(gold, pred))}
    assert tasks["cola"]["dev"]["dev"]["mcc"] != pytest.approx(accuracy_score(gold, pred))  # not accuracy
    gold, pred = predictions("mrpc-dev")
    assert tasks["mrpc"]["dev"]["dev"] == {
        "f1": pytest.approx(f1_score(gold, pred, pos_label="1", zero_division=0)),
        "accuracy": pytest.approx(accuracy_score(gold, pred)),
    }
    gold, pred = predictions("stsb-dev")
    stsb = tasks["stsb"]["dev"]["dev"]
    assert stsb["pearson"] == pytest.approx(pearsonr(gold, pred).statistic, abs=1e-6)
    assert stsb["spearman"] == pytest.approx(spearmanr(gold, pred).statistic, abs=1e-6)
    assert set(tasks["mnli"]["dev"]) == {"dev_matched", "dev_mismatched"}
    scores = [sum(v.values()) / len(v) for v in tasks["mrpc"]["dev"].values()]
    assert tasks["mrpc"]["score"] == pytest.approx(scores[0])
    assert suite["average"] == pytest.approx(sum(t["score"] for t in tasks.values()) / 4)
    for row in ("| CoLA | mcc |", "| MRPC | f1 / accuracy |", "| STS-B | pearson / spearman |",
                "| MNLI-m | accuracy |", "| MNLI-mm | accuracy |", "| average |"):  # fmt: skip
        assert row in stdout
    assert (out / "cola" / "best" / "model.safetensors").is_file()


def test_bad_inputs_are_one_line(glue_dir, tiny_pretrained, tmp_path, capsys, monkeypatch):
    base = ["evaluate-suite", "glue", "--init", tiny_pretrained, "--out", tmp_path / "suite"]
    code, _, err = run(capsys, *base, "--glue-dir", glue_dir, "--tasks", "cola,mnlii")
    assert_one_line_error(code, err, "mnlii", "--tasks cola,sst2")
    (glue_dir / "RTE" / "dev.tsv").unlink()
    code, _, err = run(capsys, *base, "--glue-dir", glue_dir, "--tasks", "rte")
    assert_one_line_error(code, err, "RTE/dev.tsv not found")
    (glue_dir / "SST-2" / "train.tsv").write_text("text\tlabel\ngood\t1\n")
    code, _, err = run(capsys, *base, "--glue-dir", glue_dir, "--tasks", "sst2")
    assert_one_line_error(code, err, "no column sentence", "original GLUE TSV")
    import datasets  # noqa: F401  (imported before the variables are set: they must count all the same)

    lookups = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: lookups.append(host) or 1 / 0)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = run(capsys, *base, "--glue-dir", "hf:nyu-mll/glue", "--tasks", "cola")
    assert_one_line_error(code, err, "could not load hf:nyu-mll/glue", "--glue-dir")
    assert lookups == []  # the hub was not asked (it was, through ~25 s of retries)
    assert not (tmp_path / "suite").exists()
