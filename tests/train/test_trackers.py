"""train.report_to: TensorBoard, MLflow (a real SQLite store, read back with MlflowClient) and W&B (offline,
its run file read back) receive the config, every metric of metrics.jsonl, the test metrics and the files."""

import json
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

from tests.helpers.runs import Interrupt, run_args, stop_at
from tests.helpers.wandb_offline import offline_run
from warmstart import config as C
from warmstart.cli.main import main
from warmstart.commands.finetune import finetune
from warmstart.commands.pretrain import pretrain
from warmstart.errors import WarmstartError
from warmstart.train.loop import TrainConfig
from warmstart.train.trackers.run import Trackers

# MLflow's SQL store on SQLAlchemy 2.1 warns of a loader option it uses; nothing of warmstart's
pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated"),
]
FAST = ["train.progress=false", "task.max_length=48", "train.batch_size=16", "evals_per_epoch=2", "epochs=1"]


@pytest.fixture(scope="module")
def mlflow_db(tmp_path_factory):
    """A SQLite MLflow store, created once (its schema migrations take seconds): the tracking URI."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    MlflowClient(uri).search_experiments()
    return uri


@pytest.fixture
def tracking(mlflow_db, tmp_path, monkeypatch, request):
    """The environment of a run that reports to MLflow and W&B (offline), nothing outside ``tmp_path``: an
    experiment of its own (artifacts in tmp_path/artifacts); returns (client, experiment id)."""
    from mlflow import MlflowClient

    client = MlflowClient(mlflow_db)
    exp_id = client.create_experiment(request.node.name, artifact_location=str(tmp_path / "artifacts"))
    for name, value in {"MLFLOW_TRACKING_URI": mlflow_db, "MLFLOW_EXPERIMENT_NAME": request.node.name,
                        "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path / "wandb-dir"),
                        "WANDB_SILENT": "true", "WANDB_PROJECT": "warmstart-tests"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    return client, exp_id


def records(run_dir, split: str) -> list[dict]:
    rows = [json.loads(r) for r in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if r["split"] == split]


def history(client, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def test_finetune_reports_to_tensorboard_mlflow_and_wandb(tiny_pretrained, rt_small, tmp_path, tracking):
    client, exp_id = tracking
    run_dir = tmp_path / "rt"
    flags = {"init": str(tiny_pretrained), "out": str(run_dir), "data": {"dataset": str(rt_small)}}
    finetune(None, flags, FAST + ["train.lr=1e-3", "train.report_to=tensorboard,mlflow,wandb"])
    test = json.loads((run_dir / "test_metrics.json").read_text())["test"]
    train = records(run_dir, "train")
    assert len(train) >= 2 and test["accuracy"] > 0

    # MLflow: one finished run named after the run directory, its id kept for --resume
    (run,) = client.search_runs([exp_id])
    assert run.info.run_name == "rt" and run.info.status == "FINISHED"
    assert json.loads((run_dir / "trackers.json").read_text())["mlflow"]["run_id"] == run.info.run_id
    assert run.data.params["train.lr"] == "0.001" and run.data.params["task.max_length"] == "48"
    assert history(client, run.info.run_id, "train/loss") == [
        (r["step"], pytest.approx(r["loss"])) for r in train
    ]
    val = records(run_dir, "validation")
    assert [s for s, _ in history(client, run.info.run_id, "validation/accuracy")] == [r["step"] for r in val]
    assert run.data.metrics["test/accuracy"] == pytest.approx(test["accuracy"])
    files = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "metrics.jsonl", "test_metrics.json"} <= files

    # W&B, offline: the run file holds the config, every train loss, the test metrics and the files
    wb = offline_run(run_dir)
    assert json.loads((run_dir / "trackers.json").read_text())["wandb"]["id"] == wb["id"]
    assert wb["name"] == "rt" and wb["config"]["train.lr"] == 0.001
    assert wb["config"]["task.max_length"] == 48 and wb["config"]["out"] == str(run_dir)
    logged = [(h["_step"], h["train/loss"]) for h in wb["history"] if "train/loss" in h]
    assert logged == [(r["step"], pytest.approx(r["loss"])) for r in train]
    assert wb["summary"]["test/accuracy"] == pytest.approx(test["accuracy"])
    (artifact,) = wb["artifacts"]
    assert {"config.yaml", "metrics.jsonl", "test_metrics.json"} <= set(artifact["files"])

    # TensorBoard: scalars, the test metrics, the config as text and the hparams plugin's session
    acc = EventAccumulator(str(run_dir / "tb"))
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/loss")] == [r["step"] for r in train]
    (scored,) = acc.Scalars("test/accuracy")
    assert scored.value == pytest.approx(test["accuracy"]) and scored.step == train[-1]["step"]
    assert "config/text_summary" in acc.Tags()["tensors"]
    plugin = acc.PluginTagToContent("hparams")
    start = HParamsPluginData.FromString(plugin["_hparams_/session_start_info"]).session_start_info
    assert start.hparams["train.lr"].number_value == pytest.approx(1e-3)
    experiment = HParamsPluginData.FromString(plugin["_hparams_/experiment"]).experiment
    assert "test/accuracy" in {m.name.tag for m in experiment.metric_infos}


def test_resumed_pretraining_logs_each_step_once(small_shards, tmp_path, tracking):
    """Killed after step 7 (checkpoint at 4) and resumed: MLflow keeps one run whose every metric has each
    step once, with the values of metrics.jsonl; TensorBoard dropped the killed run's steps 5-7."""
    client, exp_id = tracking
    args = run_args(small_shards, tmp_path / "run")  # 8 steps of one micro-batch: a checkpoint at 4 and 8
    args["flags"]["train"]["steps"] = 8
    args["overrides"] = args["overrides"] + ["train.grad_accum=1", "train.report_to=tensorboard,mlflow"]
    with pytest.raises(Interrupt):
        pretrain(**args, hooks=[stop_at(7)])
    (killed,) = client.search_runs([exp_id])
    assert killed.info.status == "FAILED"
    assert [s for s, _ in history(client, killed.info.run_id, "train/loss")] == list(range(1, 8))
    pretrain(None, None, {}, [], resume=str(tmp_path / "run"))

    (run,) = client.search_runs([exp_id])
    assert run.info.run_id == killed.info.run_id and run.info.status == "FINISHED"
    train = records(tmp_path / "run", "train")
    assert [r["step"] for r in train] == list(range(1, 9))
    logged = history(client, run.info.run_id, "train/loss")
    assert logged == [(r["step"], pytest.approx(r["loss"])) for r in train]
    assert [s for s, _ in history(client, run.info.run_id, "validation/loss")] == [0, 4, 8]
    assert {"config.yaml", "metrics.jsonl"} <= {a.path for a in client.list_artifacts(run.info.run_id)}
    acc = EventAccumulator(str(tmp_path / "run" / "tb"))
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/loss")] == list(range(1, 9))
    # no test split in pretraining: the last validation metrics are the hparams plugin's metrics
    plugin = acc.PluginTagToContent("hparams")
    experiment = HParamsPluginData.FromString(plugin["_hparams_/experiment"]).experiment
    assert {m.name.tag for m in experiment.metric_infos} == {"validation/loss", "validation/accuracy",
                                                             "validation/perplexity"}  # fmt: skip


def test_a_missing_tracker_package_is_one_line_before_the_run(
    tiny_pretrained, rt_small, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if not installed
    flags = {"init": str(tiny_pretrained), "out": str(tmp_path / "rt"), "data": {"dataset": str(rt_small)}}
    with pytest.raises(WarmstartError) as caught:
        finetune(None, flags, FAST + ["train.report_to=tensorboard,mlflow"])
    assert str(caught.value) == (
        "train.report_to names mlflow but mlflow is not installed; pip install 'warmstart[mlflow]'"
    )
    assert not (tmp_path / "rt").exists()
    argv = [
        "finetune",
        "--init",
        str(tiny_pretrained),
        "--dataset",
        str(rt_small),
        "--out",
        str(tmp_path / "rt"),
    ]
    assert main([*argv, "train.report_to=mlflow"]) == 2
    assert capsys.readouterr().err.strip().endswith(str(caught.value))


def test_report_to_names_are_checked():
    assert C.from_dict(TrainConfig, {"report_to": "mlflow,wandb"}).report_to == ["mlflow", "wandb"]
    assert TrainConfig().report_to == ["tensorboard"]
    for bad in (["mlfow"], ["none", "mlflow"]):
        with pytest.raises(WarmstartError, match="train.report_to must be tensorboard/mlflow/wandb or none"):
            TrainConfig(report_to=bad)


def test_none_reports_nowhere(tmp_path):
    """report_to=none (or []): metrics.jsonl alone, no tb/ and no trackers.json."""
    for report_to in (["none"], []):
        trackers = Trackers(tmp_path, report_to)
        trackers.start(TrainConfig(report_to=report_to), None)
        trackers.scalars(1, {"train/loss": 1.0})
        trackers.finish(1, {"accuracy": 0.5})
    assert list(tmp_path.iterdir()) == []


def test_a_seed_is_named_after_its_parent_run(tmp_path):
    """Several seeds: each RUN/seed-N reports as RUN/seed-N in the group RUN, with its own train.seed and the
    parent's config.yaml."""
    root = tmp_path / "sst"
    (root / "seed-2").mkdir(parents=True)
    (root / "config.yaml").write_text("seeds: [1, 2]\ntask: {max_length: 48}\ntrain: {seed: 0}\n")
    run = Trackers(root / "seed-2", ["tensorboard"])._tracked(TrainConfig(seed=2), None)
    assert (run.name, run.group) == ("sst/seed-2", "sst")
    assert run.params["train.seed"] == 2 and run.params["task.max_length"] == 48
