"""train.metric_for_best_model and train.greater_is_better (train/best_metric.py): the chosen validation
metric picks RUN/best and is what best.json and test_metrics.json name; a metric the validation does not
report is one line before the first step."""

import json
from types import SimpleNamespace

import pytest

from tests.helpers.runs import validation_records
from warmstart.cli.main import main
from warmstart.commands.finetune import finetune
from warmstart.errors import WarmstartError
from warmstart.train.best_metric import chosen_metric
from warmstart.train.loop import TrainConfig

FAST = ["train.progress=false", "task.max_length=48", "train.batch_size=16", "evals_per_epoch=4"]


def run(init, data, out, *extra):
    flags = {"init": str(init), "data": {"dataset": str(data)}, "epochs": 2, "out": str(out)}
    return finetune(None, flags, [*FAST, "train.lr=3e-3", *extra])


def test_metric_for_best_model_loss_picks_the_lowest_validation_loss(tiny_pretrained, rt_small, tmp_path):
    out = tmp_path / "run"
    run(tiny_pretrained, rt_small, out, "train.metric_for_best_model=loss")
    val = [r for r in validation_records(out) if r["step"] > 0]
    assert len(val) >= 4
    lowest = min(val, key=lambda r: r["loss"])  # the first of equals, as the loop keeps the first best
    best = json.loads((out / "best" / "best.json").read_text())
    assert best == {"step": lowest["step"], "metric": "loss", "value": lowest["loss"]}
    tm = json.loads((out / "test_metrics.json").read_text())
    assert tm["metric"] == "loss" and tm["best_step"] == lowest["step"]
    assert tm["best_validation"] == lowest["loss"] and "loss" in tm["test"]


def test_a_metric_the_validation_does_not_report_is_one_line(tiny_pretrained, rt_small, tmp_path, capsys):
    argv = [
        "finetune",
        "--init",
        str(tiny_pretrained),
        "--dataset",
        str(rt_small),
        "--out",
        str(tmp_path / "r"),
    ]
    assert main([*argv, "--epochs", "1", *FAST, "train.metric_for_best_model=bleu"]) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "metric_for_best_model" in x]
    assert len(lines) == 1 and "bleu is not a metric this run's validation reports" in lines[0]
    assert "accuracy" in lines[0] and "loss" in lines[0] and "Traceback" not in err
    assert not list((tmp_path / "r").glob("checkpoints/step-*"))  # refused before any step was saved


def test_without_a_start_evaluation_the_first_evaluation_refuses_it(tiny_pretrained, rt_small, tmp_path):
    with pytest.raises(WarmstartError, match="it reports .*accuracy"):
        run(tiny_pretrained, rt_small, tmp_path / "r", "train.eval_at_start=false",
            "train.metric_for_best_model=accuracy_top5")  # fmt: skip


@pytest.mark.parametrize(
    "own,name,greater,expected",
    [
        (("accuracy", "max"), None, None, ("accuracy", "max")),  # the unit's own
        (("accuracy", "max"), "loss", None, ("loss", "min")),
        (("accuracy", "max"), "perplexity", None, ("perplexity", "min")),
        (("accuracy", "max"), "word_error_rate", None, ("word_error_rate", "min")),
        (("accuracy", "max"), "macro_f1", None, ("macro_f1", "max")),
        (("accuracy", "max"), "loss", True, ("loss", "max")),  # said wins over inferred
        (("average", "max"), "average", None, ("average", "max")),
        (("loss", "min"), None, False, ("loss", "min")),
    ],
)
def test_direction_is_said_or_the_units_or_inferred_from_the_name(own, name, greater, expected):
    cfg = TrainConfig(metric_for_best_model=name, greater_is_better=greater)
    assert chosen_metric(SimpleNamespace(best_metric=own), cfg) == expected
