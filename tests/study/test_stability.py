"""`warmstart study --stability`: 8 arms (bias correction x epochs x re-init) over seeds, failed runs."""

import json

import pytest
import yaml

from tests.helpers.cli import assert_one_line_error
from tests.helpers.runs import STUDY_FAST
from warmstart.cli.main import main

pytestmark = pytest.mark.integration


def stability_args(run, out, *extra):
    return [
        "study", str(run), "--data", "rotten-tomatoes", "--out", str(out), "--stability", "--fractions", "1",
        "--seeds", "1,2", "--epochs", "1", "--long-epochs", "2", "--reinit", "1", "--min-steps", "0",
        *[o for o in STUDY_FAST if not o.startswith("data.train_limit")], "data.train_limit=64",
        "data.validation_limit=200", "data.test_limit=200", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def stability_dir(tiny_pretrained, tmp_path_factory):
    out = tmp_path_factory.mktemp("stability") / "rt"
    assert main(stability_args(tiny_pretrained, out)) == 0
    return out


def test_every_arm_runs_with_its_own_settings(stability_dir):
    study = json.loads((stability_dir / "study.json").read_text())
    arms = [m for m in study["models"] if m != "tfidf"]
    assert len(arms) == 8 and len(study["cells"]) == 8 * 2 + 2
    for arm in arms:
        optimizer, epochs, reinit = arm.split("-")
        steps = set()
        for seed in (1, 2):
            run = stability_dir / "cells" / arm / "frac-1" / f"seed-{seed}" / "run"
            cfg = yaml.safe_load((run / "config.yaml").read_text())
            assert cfg["train"]["adam_bias_correction"] == (optimizer == "adamw")
            assert cfg["strategy"]["reinit_top_k"] == int(reinit.removeprefix("reinit"))
            assert cfg["epochs"] == float(epochs.removesuffix("ep"))
            steps.add(json.loads((run / "test_metrics.json").read_text())["steps"])
        assert steps == {4 * int(epochs.removesuffix("ep"))}  # 64 examples, batch 16: 4 steps an epoch


def test_table_counts_failed_runs_against_the_validation_majority(stability_dir):
    study = json.loads((stability_dir / "study.json").read_text())
    majority = study["dataset"]["validation_majority"]
    assert 0.5 <= majority < 1
    for row in study["table"]:
        mine = [c for c in study["cells"] if c["model"] == row["model"]]
        if any("C" in c for c in mine):  # the fitted baseline is not a training run that can fail
            assert "failed" not in row
            continue
        want = sorted(c["seed"] for c in mine if c["best_validation"] <= majority + 1e-9)
        assert row["failed_seeds"] == want and row["failed"] == len(want)


def test_report_shows_the_distribution_per_arm(stability_dir):
    html = (stability_dir / "report.html").read_text()
    assert "stability study" in html and "BERTAdam, 2 epochs, re-init top 1" in html
    assert "failed runs" in html.lower() and "data:image/png;base64" in html
    md = (stability_dir / "report.md").read_text()
    assert md.count("| AdamW") == 4 and md.count("| BERTAdam") == 4


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["train.adam_bias_correction=false"], "sets train.adam_bias_correction in its arms"),
        (["strategy.reinit_top_k=2"], "sets strategy.reinit_top_k in its arms"),
        (["--long-epochs", "1"], "--long-epochs (1) must be above --epochs (1)"),
    ],
)
def test_bad_stability_settings_are_one_line(tiny_pretrained, tmp_path, capsys, extra, needle):
    out = tmp_path / "s"
    code = main(stability_args(tiny_pretrained, out, *extra))
    assert_one_line_error(code, capsys.readouterr().err, needle)
    assert not out.exists()
