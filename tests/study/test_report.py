"""`warmstart report`: a study's page (three embedded plots, numbers equal to study.json) and a run's page."""

import json
import re

from tests.helpers.cli import assert_one_line_error, run
from warmstart.cli.main import main
from warmstart.train.logging import read_metrics

IMG = re.compile(r'<img alt="([^"]+)" src="data:image/png;base64,[A-Za-z0-9+/=]{200,}">')


def md_tables(md: str, heading: str) -> list[list[list[str]]]:
    """The tables under ``## heading`` in a Markdown page, each a list of rows (header row first)."""
    section = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    tables, block = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-"):
                block.append(cells)
        elif block:
            tables.append(block)
            block = []
    return tables


def no_remote_resources(html: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)
    assert not re.search(r"url\(|@import|<script|<link|<iframe", html, re.I)
    assert "http://" not in html and "https://" not in html


def test_study_report(study_dir):
    html = (study_dir / "report.html").read_text()
    alts = IMG.findall(html)
    assert len(alts) == 3 and any("label fraction" in a for a in alts) and any("step" in a for a in alts)
    assert any("pretraining" in a for a in alts)
    no_remote_resources(html)
    study = json.loads((study_dir / "study.json").read_text())
    (rows,) = md_tables((study_dir / "report.md").read_text(), "Final table")
    header, body = rows[0], rows[1:]
    assert len(body) == len(study["table"]) == 6
    for cells, row in zip(body, study["table"]):
        got = dict(zip(header, cells))
        assert (got["model"], float(got["fraction"]), int(got["train examples"])) == (
            row["model"], row["fraction"], row["train_examples"]
        )  # fmt: skip
        for metric in ("accuracy", "macro_f1"):
            for k in ("median", "min", "max"):
                assert got[f"{k} {metric}"] == f"{row[metric][k]:.4f}"
                assert f"<td>{row[metric][k]:.4f}</td>" in html
    for png in ("report_fractions.png", "report_convergence.png", "report_pretraining.png"):
        assert (study_dir / png).is_file() and f"]({png})" in (study_dir / "report.md").read_text()


def test_pretraining_run_report(tiny_pretrained, tmp_path, capsys):
    out = tmp_path / "r" / "pre.html"
    assert main(["report", str(tiny_pretrained), "--out", str(out)]) == 0
    html = out.read_text()
    assert len(IMG.findall(html)) == 1 and "pretraining loss" in IMG.findall(html)[0]
    no_remote_resources(html)
    md = (tmp_path / "r" / "pre.md").read_text()
    shards, table = md_tables(md, "Pretraining")
    assert shards[1][:2] == ["train", "40"]  # documents of the small shards' train split
    rows = {r[0]: r for r in table[1:]}
    train, val = read_metrics(tiny_pretrained, "train"), read_metrics(tiny_pretrained, "validation")
    assert rows["last train"][1:3] == [str(train[-1]["step"]), f"{train[-1]['loss']:.4f}"]
    assert rows["first validation"][1:3] == [str(val[0]["step"]), f"{val[0]['loss']:.4f}"]
    assert rows["last validation"][1:3] == [str(val[-1]["step"]), f"{val[-1]['loss']:.4f}"]
    assert "config.yaml" in md and "objective: mlm" in md


def test_report_of_a_non_run_is_one_line(tmp_path, capsys):
    code, _, err = run(capsys, "report", tmp_path / "missing")
    assert_one_line_error(code, err, "no such run or study directory")
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "report", tmp_path / "empty")
    assert_one_line_error(code, err, "not a warmstart run or study directory")


def test_finetune_run_report(study_dir, tmp_path):
    cell = study_dir / "cells" / "pretrained" / "frac-1" / "seed-1" / "run"
    out = tmp_path / "ft.html"
    assert main(["report", str(cell), "--out", str(out)]) == 0
    assert len(IMG.findall(out.read_text())) == 2  # training loss and learning rate; validation curve
    weights = out.with_suffix(".md").read_text().split("## Weight change\n", 1)[1].split("\n## ", 1)[0]
    assert "no weight change to show (no model found" in weights  # a study cell keeps its metrics only
    (table,) = md_tables(out.with_suffix(".md").read_text(), "Finetuning")
    got = dict(zip(table[0], table[1]))
    test = json.loads((cell / "test_metrics.json").read_text())
    assert got["test accuracy"] == f"{test['test']['accuracy']:.4f}"
    assert got["best step"] == str(test["best_step"])


def test_word2vec_run_report(wiki_extracts, tmp_path):
    corpus = tmp_path / "wiki.txt"
    corpus.write_text("\n".join(t.replace("\n", " ") for t in wiki_extracts[:600]) + "\n")
    w2v = tmp_path / "w2v"
    args = ["word2vec", "train", "--corpus", str(corpus), "--out", str(w2v), "--epochs", "1", "--dim", "16"]
    assert main(args) == 0
    assert main(["report", str(w2v)]) == 0
    md = (w2v / "report.md").read_text()
    analogy, similarity = md_tables(md, "Word vectors")
    metrics = json.loads((w2v / "metrics.json").read_text())
    total, want = next(r for r in analogy if r[0] == "total"), metrics["analogy"]["total"]
    assert total[1:3] == [str(want["correct"]), str(want["correct"] + want["incorrect"])]
    assert [r[0] for r in similarity[1:]] == ["wordsim353", "simlex999"]
    html = (w2v / "report.html").read_text()
    assert ("projection" in IMG.findall(html)[0]) if (w2v / "projection.png").is_file() else True
    no_remote_resources(html)


def test_generation_run_report_shows_samples(bpe_shards, tmp_path):
    from tests.helpers.runs import pretrain_family

    run_dir = tmp_path / "gpt2"
    pretrain_family("gpt2", bpe_shards, run_dir, steps=4)
    assert main(["report", str(run_dir)]) == 0
    (samples,) = md_tables((run_dir / "report.md").read_text(), "Sample outputs")
    assert samples[0] == ["prompt", "generated"] and len(samples) == 4
