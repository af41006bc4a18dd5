"""`warmstart evaluate-suite glue`: the GLUE tasks read from glue_data/ in the original TSV layout, or from
the hub's layout (nyu-mll/glue's parquet files and configs, in a local folder given as hf:FOLDER, through the
same `datasets.load_dataset` call as the hub's name), each finetuned from a tiny pretrained run and scored
with its official metric; the table and its average."""

import json
import socket

import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.glue import NLI, snippets, write_glue, write_glue_hub
from warmstart.data.glue import TASKS, read_task
from warmstart.tasks.glue_metrics import mcc, spearman


@pytest.fixture
def glue_dir(rt_small, tmp_path):
    return write_glue(tmp_path / "glue_data", snippets(rt_small))


@pytest.fixture
def glue_hub(rt_small, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))  # the datasets cache: the test's own
    return write_glue_hub(tmp_path / "glue_hub", snippets(rt_small))


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
    before = {name: read_task(str(glue_dir), name) for name in ("mrpc", "cola")}
    for tsv in (glue_dir / "MRPC" / "train.tsv", glue_dir / "CoLA" / "dev.tsv"):  # a byte-order mark first
        tsv.write_bytes(b"\xef\xbb\xbf" + tsv.read_bytes())
    assert {name: read_task(str(glue_dir), name) for name in ("mrpc", "cola")} == before


def test_the_hubs_copy_reads_as_the_original_tsvs(glue_dir, glue_hub):
    """Every task from the hub's layout: the same records as from the TSVs (the columns the hub renamed,
    class indices as the TSVs write them or by name for MNLI/QNLI/RTE, STS-B's float32 scores), the unlabeled
    test splits left out."""
    for name in TASKS:
        assert read_task(f"hf:{glue_hub}", name) == read_task(str(glue_dir), name), name


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


def test_the_suite_runs_from_the_hubs_layout(glue_dir, glue_hub, tiny_pretrained, tmp_path, capsys):
    out = tmp_path / "suite"
    args = ["evaluate-suite", "glue", "--init", tiny_pretrained, "--tasks", "rte,stsb", "--max-steps", 2]
    code, stdout, err = run(capsys, *args, "--batch-size", 8, "--glue-dir", f"hf:{glue_hub}", "--out", out)
    assert code == 0, err
    assert "| RTE | accuracy |" in stdout and "| STS-B | pearson / spearman |" in stdout
    rows = [json.loads(line) for line in (out / "predictions" / "rte-dev.jsonl").read_text().splitlines()]
    assert [r["gold"] for r in rows] == [r["label"] for r in read_task(str(glue_dir), "rte")["dev"]]
    assert {r["predicted"] for r in rows} <= {"entailment", "not_entailment"}
