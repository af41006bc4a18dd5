"""Weights & Biases: ``wandb.init(project=WANDB_PROJECT or "warmstart", dir=RUN, config=...)``, honouring
WANDB_MODE (``offline`` writes RUN/wandb/offline-run-*, for ``wandb sync``). The run's id is kept in
RUN/trackers.json so that ``--resume`` continues it; W&B itself drops steps below the resumed one."""

from __future__ import annotations

import os

from warmstart.errors import WarmstartError


class WandB:
    name = "wandb"

    def __init__(self, run, saved: dict | None):
        import wandb

        run_id = (saved or {}).get("id")
        try:
            self.run = wandb.init(
                project=os.environ.get("WANDB_PROJECT") or "warmstart",
                dir=str(run.dir),
                name=run.name,
                group=run.group,
                id=run_id,
                resume="allow" if run_id else None,
                config=None if run_id else run.params,
                settings=wandb.Settings(console="off", silent=True),
            )
        except (wandb.errors.UsageError, wandb.errors.CommError) as exc:  # no API key, no network, ...
            raise WarmstartError(
                f"W&B could not start a run: {exc}", "run `wandb login`, or set WANDB_MODE=offline"
            ) from None
        self.state = {"id": self.run.id}

    def scalars(self, step: int, values: dict[str, float]) -> None:
        if step >= self.run.step:
            self.run.log(values, step=step)

    def finish(self, step: int, scores: dict[str, float], files) -> None:
        import wandb

        self.run.summary.update(scores)
        if files:
            artifact = wandb.Artifact(f"run-{self.run.id}-files", type="run-files")
            for path in files:
                artifact.add_file(str(path), name=path.name)
            self.run.log_artifact(artifact)

    def close(self, ok: bool) -> None:
        self.run.finish(exit_code=0 if ok else 1)
