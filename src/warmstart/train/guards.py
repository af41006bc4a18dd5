"""Guards of the fit loop: a step whose loss or gradient norm is NaN or inf is skipped (no update, gradients
zeroed, the batch consumed) up to ``train.max_bad_steps`` times in a run, then the run stops; a gradient
norm above ``train.spike_factor`` x the median of the last ``SPIKE_WINDOW`` norms is logged as a spike.
Under ``train.fp16`` only the loss is checked here: an inf/NaN gradient beside a finite loss is the loss
scaler's overflow, a step it skips and counts itself (precision.py), not a bad step.

The guard's counts live in the checkpoint's trainer state, so a resumed run skips and logs exactly as an
uninterrupted one would (a skip depends only on the data and the state, never on time or chance).
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import torch

from warmstart.errors import WarmstartError

SPIKE_WINDOW = 100  # recent gradient norms whose median is the reference
SPIKE_MIN = 10  # norms needed before a spike can be flagged


class StepGuard:
    def __init__(self, max_bad_steps: int, spike_factor: float, state: dict):
        self.max_bad_steps, self.spike_factor = max_bad_steps, spike_factor
        self.bad_steps = int(state.get("bad_steps", 0))
        self.norms = [float(x) for x in state.get("grad_norms", [])]

    @staticmethod
    def problem(loss: float, grad_norm: float | None) -> str | None:
        """Why this step must be skipped ("loss nan", "gradient norm inf"), or None for a good step."""
        if not math.isfinite(loss):
            return f"loss {loss}"
        if grad_norm is not None and not math.isfinite(grad_norm):
            return f"gradient norm {grad_norm}"
        return None

    def skip(self, problem: str) -> dict:
        """Count a skipped step; its metrics record."""
        self.bad_steps += 1
        return {"problem": problem, "bad_steps": self.bad_steps, "max_bad_steps": self.max_bad_steps}

    @property
    def exhausted(self) -> bool:
        return self.bad_steps > self.max_bad_steps

    def stop(self, step: int, problem: str, last_checkpoint: Path | None) -> WarmstartError:
        """The error past the limit: it names the step and the last good checkpoint (skipped steps never
        changed the weights, so the checkpoint is intact)."""
        where = f"last good checkpoint {last_checkpoint}" if last_checkpoint else "no checkpoint yet"
        return WarmstartError(
            f"{problem} at step {step}, bad step {self.bad_steps} "
            f"(more than train.max_bad_steps={self.max_bad_steps}); stopped, {where}",
            "lower train.lr or keep train.clip_norm on, then continue with --resume "
            "(add e.g. train.lr=1e-4 train.max_bad_steps=20 to the resume command)",
        )

    @staticmethod
    def nonfinite_weight(unit) -> str | None:
        """The name of a parameter holding NaN or inf, or None (one pass over the weights: called before a
        checkpoint is written and after a bad step, not every step)."""
        for name, p in unit.named_parameters():
            if not bool(torch.isfinite(p.detach()).all()):
                return name
        return None

    def broken(self, step: int, name: str, last_checkpoint: Path | None) -> WarmstartError:
        """The error when an update left non-finite weights: nothing of them is written."""
        where = f"the last good checkpoint is {last_checkpoint}" if last_checkpoint else "no checkpoint yet"
        return WarmstartError(
            f"the weights are no longer finite at step {step} ({name} holds NaN or inf); stopped without "
            f"writing them, {where}",
            "lower train.lr (or keep train.clip_norm on), then continue with --resume (e.g. train.lr=1e-4)",
        )

    def spike(self, grad_norm: float) -> dict | None:
        """A grad_spike record when ``grad_norm`` exceeds spike_factor x the running median, else None."""
        record = None
        if self.spike_factor and len(self.norms) >= SPIKE_MIN:
            median = statistics.median(self.norms)
            if grad_norm > self.spike_factor * median:
                record = {"grad_norm": grad_norm, "median": median, "ratio": grad_norm / max(median, 1e-30)}
        self.norms = (self.norms + [grad_norm])[-SPIKE_WINDOW:]
        return record

    def state(self) -> dict:
        return {"bad_steps": self.bad_steps, "grad_norms": list(self.norms)}
