"""Joint training's log (issue 40): metrics.jsonl holds the task's and each objective's loss beside the total,
and the learned weights' trajectory, the total being the task's loss plus each weighted objective's; the run
report plots them."""

import json

import pytest

from warmstart.commands.finetune import finetune
from warmstart.report.build import write_report

pytestmark = pytest.mark.integration


def test_joint_run_logs_each_objective_and_the_learned_weights(tiny_pretrained, rt_small, tmp_path):
    over = ["train.progress=false", "task.max_length=48", "train.batch_size=16", "evals_per_epoch=1",
            "train.log_every=1", "data.train_limit=96", "aux.objectives=mlm,electra",
            "aux.learn_weights=true", "aux.meta_every=2", "aux.weights=[1,0.5]"]  # fmt: skip
    flags = {"init": str(tiny_pretrained), "data": {"dataset": str(rt_small)}, "out": str(tmp_path / "j")}
    finetune(None, {**flags, "epochs": 1}, over)
    rows = [json.loads(r) for r in (tmp_path / "j" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["split"] == "train"]
    keys = {"task/loss", "mlm/loss", "electra/loss", "mlm/weight", "electra/weight"}
    assert len(train) == 6 and all(keys <= r.keys() for r in train)
    for r in train:  # one micro-batch a step: the logged total is the sum of the logged parts
        parts = r["task/loss"] + r["mlm/weight"] * r["mlm/loss"] + r["electra/weight"] * r["electra/loss"]
        assert r["loss"] == pytest.approx(parts, rel=1e-5)
    mlm = [r["mlm/weight"] for r in train]
    assert mlm[0] != pytest.approx(1.0) and len(set(mlm)) > 1  # moved at step 0 and later (meta_every 2)
    final = json.loads((tmp_path / "j" / "test_metrics.json").read_text())["aux_weights"]
    assert final == {"mlm": pytest.approx(mlm[-1]), "electra": pytest.approx(train[-1]["electra/weight"])}
    html = write_report(tmp_path / "j", tmp_path / "report.html")  # the run report plots the parts
    assert (tmp_path / "report_joint.png").stat().st_size > 1000
    assert "training loss of the task and of each objective" in html.read_text()
