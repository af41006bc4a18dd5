"""MLflow, through its own client (``mlflow.MlflowClient``) into whatever ``MLFLOW_TRACKING_URI`` names
(unset: MLflow's default). The experiment is ``MLFLOW_EXPERIMENT_NAME`` or "warmstart", the run is named
after the run directory, and its id is kept in RUN/trackers.json so that ``--resume`` continues it. A
resumed run does not log a step twice: the steps each metric already has (the interrupted run's, which an
exact resume recomputes alike) are skipped."""

from __future__ import annotations

import os
import re
import sys
import time

_PARAM_LIMIT = 500  # characters of a param value every MLflow version takes; config.yaml is an artifact
_BATCH = 100  # params per log_batch call (MLflow's limit)


class MLflow:
    name = "mlflow"

    def __init__(self, run, saved: dict | None):
        from mlflow import MlflowClient, get_tracking_uri
        from mlflow.exceptions import MlflowException

        uri = get_tracking_uri()  # MLFLOW_TRACKING_URI, or MLflow's default
        self.client = MlflowClient(uri)
        self.done: dict[str, int] = {}  # metric -> the last step the tracker already has
        run_id = (saved or {}).get("run_id")
        if run_id:
            try:
                self.client.get_run(run_id)
            except MlflowException:  # another tracking store than the one the run started in
                print(f"mlflow: run {run_id} is not in {uri}: a new run", file=sys.stderr)
                run_id = None
        if run_id:
            self.client.update_run(run_id, status="RUNNING")
            for key in self.client.get_run(run_id).data.metrics:
                self.done[key] = max(m.step for m in self.client.get_metric_history(run_id, key))
        else:
            run_id = self._create(run)
        self.run_id = run_id
        self.state = {"run_id": run_id, "tracking_uri": uri}

    def _create(self, run) -> str:
        from mlflow.entities import Param

        name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or "warmstart"
        experiment = self.client.get_experiment_by_name(name)
        exp_id = experiment.experiment_id if experiment else self.client.create_experiment(name)
        tags = {"warmstart.run_dir": str(run.dir.resolve())}
        if run.group:
            tags["warmstart.group"] = run.group
        run_id = self.client.create_run(exp_id, run_name=run.name, tags=tags).info.run_id
        params = [Param(k, str(v)[:_PARAM_LIMIT]) for k, v in run.params.items()]
        for i in range(0, len(params), _BATCH):
            self.client.log_batch(run_id, params=params[i : i + _BATCH])
        return run_id

    def scalars(self, step: int, values: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [
            Metric(_key(k), v, now, step) for k, v in values.items() if step > self.done.get(_key(k), -1)
        ]
        if metrics:
            self.client.log_batch(self.run_id, metrics=metrics)

    def finish(self, step: int, scores: dict[str, float], files) -> None:
        self.scalars(step, scores)
        for path in files:
            self.client.log_artifact(self.run_id, str(path))

    def close(self, ok: bool) -> None:
        self.client.set_terminated(self.run_id, "FINISHED" if ok else "FAILED")


def _key(name: str) -> str:
    """A metric name MLflow accepts (letters, digits, ``_-. /:``); any other character becomes ``_``."""
    return re.sub(r"[^\w\-. /:]", "_", name)
