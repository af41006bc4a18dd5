"""`warmstart report`: a study's page (three embedded plots, numbers equal to study.json), a run's page, and
each report kind's figures fit for a paper or a PR: titles and all text inside the canvas, annotations inside
their axes, integer step ticks, the training loss smoothed over its faint raw curve, learning rates as 1e-4,
run names in legends and tables, PNG + SVG + PDF; the HTML renders its Markdown; text columns left-aligned."""

import json
import re
from contextlib import contextmanager
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.runs import STUDY_FAST
from warmstart.cli.main import main
from warmstart.report.build import write_report
from warmstart.report.run_report import run_name
from warmstart.train.logging import read_metrics

pytestmark = pytest.mark.integration

IMG = re.compile(r'<img alt="([^"]+)" src="data:image/png;base64,[A-Za-z0-9+/=]{200,}">')
LINK = re.compile(r"\]\(([^)]+\.png)\)")
SHORT_RATE = re.compile(r"0|\d(\.\d+)?e-?\d+")  # 1e-4, 2.5e-4


@contextmanager
def saved_figures():
    """The figures saved as PNG inside the block, kept for measuring: a spy on Figure.savefig (the real one
    still writes every file)."""
    figures, real = [], Figure.savefig

    def spy(fig, fname, *args, **kwargs):
        real(fig, fname, *args, **kwargs)
        if (kwargs.get("format") or Path(str(fname)).suffix.lstrip(".")) == "png":
            figures.append(fig)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(Figure, "savefig", spy)
        yield figures


def _inside(inner, outer, tol: float) -> bool:
    return (inner.x0 >= outer.x0 - tol and inner.y0 >= outer.y0 - tol and inner.x1 <= outer.x1 + tol
            and inner.y1 <= outer.y1 + tol)  # fmt: skip


def check_figure(fig) -> None:
    """Every title and all drawn text inside the canvas, annotations inside their axes, integer ticks on a
    step axis, learning rates as 1e-4, and a per-step training loss smoothed over its faint raw curve."""
    canvas = FigureCanvasAgg(fig)  # a closed figure has lost its pyplot canvas
    canvas.draw()
    r = canvas.get_renderer()
    for title in [ax.title for ax in fig.axes] + list(fig.texts):
        assert not title.get_text() or _inside(title.get_window_extent(r), fig.bbox, 1), title.get_text()
    assert _inside(fig.get_tightbbox(r), fig.bbox_inches, 0.01)  # tick labels, legends, axis labels too
    for ax in fig.axes:
        for a in ax.texts:
            if isinstance(a, Annotation):
                assert _inside(a.get_window_extent(r), ax.get_window_extent(r), 1), a.get_text()
        if "step" in ax.get_xlabel():
            lo, hi = sorted(ax.get_xlim())
            ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
            assert ticks and all(float(t).is_integer() for t in ticks), ticks
        if ax.get_ylabel() == "learning rate":
            labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
            assert labels and all(SHORT_RATE.fullmatch(t.replace("\u2212", "-")) for t in labels), labels
        if "training" in ax.get_title() or ax.get_title().startswith(("loss", "masked-LM loss")):
            faint = [line for line in ax.lines if (line.get_alpha() or 1) < 0.5]
            smooth = {line.get_color() for line in ax.lines if line.get_alpha() is None}
            assert "EMA" in ax.get_title() and faint, ax.get_title()
            assert all(
                line.get_marker() in ("None", None, "") and line.get_color() in smooth for line in faint
            )


def legends(figures) -> list[str]:
    return [
        t.get_text() for f in figures for ax in f.axes if ax.get_legend() for t in ax.get_legend().get_texts()
    ]


def check_page(html_path: Path, figures, skip: tuple[str, ...] = ()) -> str:
    """The figures checked, each PNG the Markdown links also as SVG and PDF, no raw Markdown in the HTML;
    returns the Markdown."""
    assert figures
    for fig in figures:
        check_figure(fig)
    md = html_path.with_suffix(".md").read_text()
    pngs = [html_path.parent / p for p in LINK.findall(md) if not p.startswith(skip)]
    assert pngs
    for png in pngs:
        assert png.with_suffix(".svg").read_text()[:200].lstrip().startswith(("<?xml", "<svg"))
        assert png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    html = html_path.read_text()
    assert "`" not in html and "**" not in html
    return md


def md_tables(md: str, heading: str) -> list[list[list[str]]]:
    """The tables under ``## heading`` in a Markdown page, each a list of rows (header row first)."""
    section = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    tables, block = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-:"):
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
                assert f'<td class="n">{row[metric][k]:.4f}</td>' in html
    for png in ("report_fractions.png", "report_convergence.png", "report_pretraining.png"):
        assert (study_dir / png).is_file() and f"]({png})" in (study_dir / "report.md").read_text()


def test_study_report_figures(study_dir, tmp_path):
    out = tmp_path / "study.html"
    with saved_figures() as figures:
        write_report(study_dir, out)
    assert len(figures) == 3  # label fractions, convergence, the pretrained run's loss and learning rate
    check_page(out, figures)
    assert {"pretrained", "scratch twin"} <= set(legends(figures))
    html = out.read_text()
    assert re.search(r'<tr><td>pretrained</td><td class="n">0\.1</td><td class="n">\d+</td>', html)


def test_pretraining_run_report(tiny_pretrained, tmp_path, capsys):
    out = tmp_path / "r" / "pre.html"
    with saved_figures() as figures:
        assert main(["report", str(tiny_pretrained), "--out", str(out)]) == 0
    (fig,) = figures
    check_page(out, figures)
    assert fig.texts[0].get_text() == f"pretraining: {tiny_pretrained.name}"
    peak = max(r["lr"] for r in read_metrics(tiny_pretrained, "train") if "lr" in r)
    said = re.search(r"highest learning rate logged is (\S+)\.\n", out.with_suffix(".md").read_text())
    assert SHORT_RATE.fullmatch(said[1]) and float(said[1]) == pytest.approx(peak, rel=5e-3)
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
    with saved_figures() as figures:
        assert main(["report", str(cell), "--out", str(out)]) == 0
    assert len(IMG.findall(out.read_text())) == 2  # training loss and learning rate; validation curve
    check_page(out, figures)
    name = run_name(cell)
    assert name == "pretrained/frac-1/seed-1" and legends(figures).count(name) == 2  # loss, validation
    assert f"<tr><td>{name}</td>" in out.read_text()  # the run's name, in a left-aligned cell
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
    assert "`" not in (w2v / "report.html").read_text() and "|:---|---:|---:|---:|---:|" in md
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


def test_finetune_report_with_confusion_and_weight_change(tiny_pretrained, rt_small, tmp_path):
    from tests.helpers.hub import finetune_run

    ft = finetune_run(tiny_pretrained, rt_small, tmp_path / "sst-ft", "data.train_limit=32")
    with saved_figures() as figures:
        write_report(ft)
    md = check_page(ft / "report.html", figures)
    assert len(figures) == 4 and "](report_confusion.png)" in md and "](report_weight_change.png)" in md
    assert legends(figures).count("sst-ft") == 2  # the training loss and the validation curve
    (table,) = md_tables(md, "Finetuning")
    assert table[1][0] == "sst-ft"
    assert figures[3].axes[0].get_title() == f"weight change: {tiny_pretrained.name} -> sst-ft"


def test_stability_report_figure(tiny_pretrained, tmp_path):
    out = tmp_path / "stability"
    argv = [
        "study", tiny_pretrained, "--data", "rotten-tomatoes", "--out", out, "--stability",
        "--fractions", "1", "--seeds", "1", "--epochs", "1", "--long-epochs", "2", "--reinit", "1",
        "--min-steps", "0", "--max-evals", "1",
        *[o for o in STUDY_FAST if not o.startswith("data.train_limit")], "data.train_limit=16",
        "data.validation_limit=16", "data.test_limit=16", "task.max_length=32", "train.eval_at_start=false",
    ]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    with saved_figures() as figures:
        write_report(out, tmp_path / "s.html")
    (fig,) = figures
    check_page(tmp_path / "s.html", figures)


SENSES = ["praise=good,great,best", "blame=bad,worst,dull"]


def test_demo_report_figures_and_page(study_dir, tiny_pretrained, tmp_path):
    """The demo's page from small real parts: the tiny run as its pretraining, the small study as each of its
    three studies, real cloze probes and word senses of the tiny run."""
    from warmstart.analysis.cloze_probes import probe_table
    from warmstart.commands.word_senses import embed_word
    from warmstart.report.demo_report import write_demo_report
    from warmstart.study.summary import read_study

    out = tmp_path / "demo"
    out.mkdir()
    (out / "pretrain").symlink_to(tiny_pretrained)
    senses = {"word": "film"}
    for name, twin in (("pretrained", False), ("twin", True)):
        where = out / "senses" / f"{name}.npy"
        plot = None if twin else ""
        senses[name] = embed_word(str(tiny_pretrained), "rotten-tomatoes", "film", SENSES, where, limit=8,
                                  plot=plot, random_init=twin)  # fmt: skip
    probes = probe_table(str(tiny_pretrained))
    studies = dict.fromkeys(("pos", "sentiment", "minilm"), read_study(study_dir))
    machine = {"processor": "cpu", "threads": 2, "torch": "2", "bf16_gflops": 9.0, "fp32_gflops": 9.0,
               "total_seconds": 60.0}  # fmt: skip
    with saved_figures() as figures:
        write_demo_report(out, {"steps": 12, "batch": 8, "seq": 32}, {"pretraining": 1.0}, studies, probes,
                          senses, machine)  # fmt: skip
    assert len(figures) == 7  # the pretraining curves, and each study's label fractions and convergence
    md = check_page(out / "report.html", figures, skip=("senses/",))
    assert "<code>warmstart data show brown-pos</code>" in (out / "report.html").read_text()
    (table,) = md_tables(md, "What pretraining put into the model: cloze probes")
    for row, probe, pre in zip(table[1:], probes["probes"], probes["pretrained"]):
        assert row[2] == json.dumps(probe["expected"], ensure_ascii=False)
        assert row[3].startswith(json.dumps(pre["top"][0][0], ensure_ascii=False) + " ")
