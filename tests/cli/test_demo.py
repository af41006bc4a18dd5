"""The demo end to end on the real data with the quick budget: tokenizer, word vectors, MLM, the three
studies (Brown tags, sentiment, MiniLM), cloze probes, word senses, and a report with the runs' numbers."""

import itertools
import json

import numpy as np
import pytest

from warmstart.analysis.cloze_probes import PROBES
from warmstart.cli.main import main
from warmstart.report.demo_sections import median, spread

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "demo"
    assert main(["demo", "--quick", "--out", str(out)]) == 0
    return out


@pytest.mark.slow
@pytest.mark.integration
def test_report_opens_with_three_sentences_and_the_claims_table(demo):
    report = (demo / "report.md").read_text()
    lines = [ln for ln in report.splitlines() if ln.strip()]
    assert lines[2].startswith("What was compared:") and lines[3].startswith("What came out:")
    assert lines[4].startswith("What it means:")
    pos = json.loads((demo / "pos" / "study.json").read_text())
    mini = json.loads((demo / "minilm-sentiment" / "study.json").read_text())
    assert pos["models"] == ["pretrained", "scratch", "frequent_tag"] and pos["dataset"]["kind"] == "tagging"
    assert mini["models"] == ["pretrained", "scratch", "tfidf"]
    for study, task in (
        (pos, "part of speech (Brown), 100% of the labels"),
        (mini, "sentiment, MiniLM, 100%"),
    ):
        row = next(ln for ln in lines if task in ln)
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[3:6] == [spread(study, m, 1.0) for m in study["models"]]
        gap = 100 * (median(study, "pretrained", 1.0) - median(study, "scratch", 1.0))
        assert cells[6] == f"{gap:+.1f}"
    verdict = (
        "above"
        if median(pos, "pretrained", 1.0) > max(median(pos, m, 1.0) for m in pos["models"][1:])
        else "NOT above"
    )
    assert f"the demo model is {verdict} its twin and the most frequent tag with all labels" in report


@pytest.mark.slow
@pytest.mark.integration
def test_studies_plots_probes_and_senses(demo):
    for name in ("pos", "sentiment", "minilm"):
        for kind in ("fractions", "convergence"):
            png = demo / f"{name}_{kind}.png"
            assert png.read_bytes()[:8] == PNG and f"]({png.name})" in (demo / "report.md").read_text()
    assert (demo / "report_pretraining.png").read_bytes()[:8] == PNG
    assert (demo / "report.html").read_text().count("data:image/png;base64,") >= 8
    # the MiniLM cells finetuned the imported real weights (22.7M parameters), its twin the same shape
    cell = json.loads(
        (demo / "minilm-sentiment/cells/pretrained/frac-1/seed-1/run/test_metrics.json").read_text()
    )
    assert cell["parameters"]["total"] > 22_000_000
    probes = json.loads((demo / "probes.json").read_text())
    assert [p["text"] for p in probes["probes"]] == [p.text for p in PROBES]
    assert all(len(r["top"]) == 3 and 1 >= r["top"][0][1] >= r["top"][1][1] for r in probes["pretrained"])
    assert probes["pretrained"] != probes["twin"]
    vectors = np.load(demo / "senses" / "pretrained.npy")
    info = json.loads((demo / "senses" / "pretrained.json").read_text())
    assert vectors.shape == (info["count"], 256) and set(info["senses"]) == {"industry", "botany"}
    assert (demo / "senses" / "pretrained.png").read_bytes()[:8] == PNG
    val = [json.loads(r) for r in (demo / "pretrain" / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in val if r["split"] == "validation"]
    assert val[0]["step"] == 0 and val[-1]["loss"] < val[0]["loss"]


def test_progress_line_says_stage_elapsed_and_an_eta_scaled_by_pace(capsys, monkeypatch):
    from warmstart.commands import demo_budget

    clock = iter([0.0, 0.0, 30.0, 30.0])
    monkeypatch.setattr(demo_budget.time, "perf_counter", lambda: next(clock))
    progress = demo_budget.Progress({"a": 10, "b": 20, "c": 40})
    progress.start("a")
    progress.done("a", 30.0)  # three times slower than the estimate: the ETA triples
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[demo 1/3] a | elapsed 0:00 | ETA 1:10"
    assert err[1] == "[demo 1/3] a: done in 0:30 | elapsed 0:30 | ETA 3:00"


@pytest.mark.slow
@pytest.mark.integration
def test_a_second_demo_is_refused(demo, capsys):
    report = (demo / "report.md").read_text()
    assert main(["demo", "--quick", "--out", str(demo)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (demo / "report.md").read_text() == report


def _paced(monkeypatch, demo_budget, seconds):
    """A Progress whose first four stages took ``seconds`` (tokenizer, vectors, shards, pretraining)."""
    full = demo_budget.BUDGETS["full"]
    clock = itertools.chain([0.0], itertools.repeat(float(sum(seconds))))
    monkeypatch.setattr(demo_budget.time, "perf_counter", lambda: next(clock))
    progress = demo_budget.Progress(full["stages"])
    for name, s in zip(demo_budget.STAGES[:4], seconds):
        progress.spent[name] = s
    return full, progress


def test_a_slow_machine_leaves_the_all_label_runs_out_and_says_so(capsys, monkeypatch):
    """Past the demo's time at this machine's pace after pretraining, the budget loses the all-label runs of
    part of speech and MiniLM (and nothing else, at 1.4x the reference's time), the ETA follows, and a line
    says what was left out."""
    from warmstart.commands import demo, demo_budget

    full, progress = _paced(monkeypatch, demo_budget, (4, 16, 6, 228))  # 254 s: 1.4x the reference's 181
    assert progress.projected() > demo_budget.LIMIT  # 254 + 1.4 x 539 s
    b = demo._few_labels(full, progress, demo_budget.LIMIT)
    assert b["pos"]["fractions"] == [0.1] and b["minilm"]["fractions"] == [0.1]
    assert b["pos"]["full_seeds"] is None and b["sentiment"] == full["sentiment"]
    pos = "part of speech (Brown)"
    assert full["pos"]["fractions"] == [0.1, 1.0] and full["stages"][pos] == 285  # budget unchanged
    assert progress.estimates[pos] == full["few_labels_stages"][pos] < full["stages"][pos]
    assert progress.projected() <= demo_budget.LIMIT
    said = capsys.readouterr().err
    assert "about 17 minutes, past its 12.5" in said and "the sentiment study, the probes" in said
    assert "--all-labels" in said and said == b["left_out"] + "\n"


def test_a_machine_at_twice_the_pace_also_leaves_the_demo_model_sentiment_out(capsys, monkeypatch):
    """Still past the time without the all-label runs (2x the reference's time), the demo model's own
    sentiment study (its row said honestly, not one of the claims) goes too, and only it."""
    from warmstart.commands import demo, demo_budget

    full, progress = _paced(monkeypatch, demo_budget, (6, 22, 8, 326))  # 362 s: 2x the reference's 181
    b = demo._few_labels(full, progress, demo_budget.LIMIT)
    assert b["sentiment"] is None and full["sentiment"] is not None
    assert (
        b["pos"]["fractions"] == [0.1]
        and b["minilm"]["fractions"] == [0.1]
        and b["pos"]["seeds"] == [1, 2, 3]
    )
    assert progress.estimates["sentiment, few labels"] == 0 and full["stages"]["sentiment, few labels"] == 50
    said = capsys.readouterr().err
    assert "and the demo model's own sentiment study" in said and "the sentiment study," not in said


@pytest.mark.slow
@pytest.mark.integration
def test_the_report_says_what_ran_when_the_all_label_runs_were_left_out(demo):
    from warmstart.report.demo_report import _claims, _sentences

    studies = {}
    for key, folder in (("pos", "pos"), ("minilm", "minilm-sentiment"), ("sentiment", "sentiment")):
        study = json.loads((demo / folder / "study.json").read_text())
        few = [f for f in study["fractions"] if f < 1]
        cells = [c for c in study["cells"] if c["fraction"] < 1]
        studies[key] = {**study, "fractions": few, "cells": cells}
    _, came, means = _sentences(studies, 1000)
    assert "with all labels" not in came and "the demo model is" in came and "with all" not in means
    assert "its twin and the most frequent tag with 25% of the labels" in came
    rows = _claims(studies)
    assert rows and not any("100%" in row[2] for row in rows)


def test_pretraining_held_to_its_minutes_is_said_and_the_eta_counts_the_steps_that_ran(capsys):
    """When train.time_budget held the demo's pretraining to fewer steps, the demo says so, the report gets
    the steps that ran, and the pace behind the ETA compares the stage with the reference's time for those
    steps (not for all 800, which would make a slow machine look fast and the rest of the ETA short)."""
    from warmstart.commands import demo, demo_budget

    full = demo_budget.BUDGETS["full"]
    progress = demo_budget.Progress(full["stages"])
    b = demo._held(full, progress, 440)
    assert b["steps_run"] == 440 and "steps_run" not in full and full["steps"] == 800  # the budget unchanged
    stage = demo_budget.STAGES[3]
    assert progress.estimates[stage] == pytest.approx(full["stages"][stage] * 440 / 800)
    said = capsys.readouterr().err
    assert said == b["held"] + "\n" and "ran 440 of its 800 steps" in said and "held to 4.5 minutes" in said


def test_after_held_pretraining_the_pace_counts_the_steps_that_ran_when_runs_are_left_out(
    monkeypatch, capsys
):
    """A demo on a machine 3-4x slower than the reference (measured: stages of 4, 12, 4 s, then 214 of 800
    pretraining steps in 208 s): its pace is that of the steps that ran, also once the all-label runs are
    left out, so it leaves out the demo model's sentiment study too (at 800 steps' reference time the pace
    would look like 1.3x and the demo would run 6 minutes over)."""
    from warmstart.commands import demo, demo_budget

    full, progress = _paced(monkeypatch, demo_budget, (4, 12, 4, 208))
    b = demo._few_labels(demo._held(full, progress, 214), progress, demo_budget.LIMIT)
    assert b["steps_run"] == 214 and b["sentiment"] is None and b["pos"]["fractions"] == [0.1]
    assert progress.estimates[demo_budget.STAGES[3]] == pytest.approx(163 * 214 / 800)
    assert "the demo model's own sentiment study" in capsys.readouterr().err
