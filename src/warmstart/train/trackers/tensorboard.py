"""TensorBoard (RUN/tb/): scalars, the config as text, and at the end the hparams plugin's summary (the
config's flat keys as hyperparameters, the test metrics as its metrics) with the test metrics as scalars."""

from __future__ import annotations


class TensorBoard:
    name = "tensorboard"
    state = None  # nothing to keep: a resumed run appends to the same directory

    def __init__(self, run, saved: dict | None):
        from torch.utils.tensorboard import SummaryWriter

        resume_step = run.resume_step
        purge = resume_step + 1 if resume_step is not None else None  # the interrupted run's later records
        self.writer = SummaryWriter(str(run.dir / "tb"), purge_step=purge)
        self.params = {k: _hparam(v) for k, v in run.params.items()}
        self.last: dict[str, float] = {}
        if resume_step is None or resume_step < 0:
            text = "".join(f"    {line}\n" for line in run.config_text.splitlines())  # markdown code block
            self.writer.add_text("config", text, 0)

    def scalars(self, step: int, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)
        self.last.update(values)

    def finish(self, step: int, scores: dict[str, float], files) -> None:
        from torch.utils.tensorboard.summary import hparams

        # a pretraining run has no test split: its last validation metrics stand in
        metrics = scores or {k: v for k, v in self.last.items() if k.startswith("validation/")}
        for summary in hparams(self.params, metrics):  # experiment, session start, session end
            self.writer.file_writer.add_summary(summary, step)
        for key, value in scores.items():
            self.writer.add_scalar(key, value, step)

    def close(self, ok: bool) -> None:
        self.writer.close()


def _hparam(value):
    """A config value as the hparams plugin takes it: a number, text or bool (lists and None as text)."""
    return value if isinstance(value, bool | int | float | str) else str(value)
