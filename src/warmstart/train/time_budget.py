"""``train.time_budget``: a run held to minutes of wall time, as cramming holds pretraining to a budget.

When warmup ends (the steps before it are the same whatever the total), the run plans its steps again: as
many as fit in what is left of the budget, never more than ``train.steps``. The pace is measured over the
second half of the steps before the plan (the first steps run slower: allocations, caches), and each
evaluation ahead is taken to cost what the one before the first step did. The schedule then decays over
the planned steps, so a run cut short still ends on a decayed learning rate (warmup-stable-decay, linear
and cosine alike) rather than stopping at its peak. The plan is kept in the checkpoint's state
(``planned_steps``): a resumed run keeps it. Under torchrun the first process plans and every process
follows.
"""

from __future__ import annotations

import time

from warmstart.train import distributed as ddp

clock = time.perf_counter  # the wall clock (a test's own clock stands in for it)
# the pace is measured over at least this many steps (a run whose warmup is shorter plans a little later)
MIN_MEASURED = 10


class TimeBudget:
    """When to plan (``due``) and how many steps fit (``plan``); off when ``minutes`` is 0."""

    def __init__(self, minutes: float, warmup: int, steps: int):
        self.seconds = minutes * 60
        self.at = min(max(warmup, MIN_MEASURED), steps - 1)  # the step after which the run plans
        self.start(0)

    def start(self, step: int) -> None:
        """The loop starts (or resumes) at ``step``: the time counts from here."""
        self.begun, self.first = clock(), step
        self.first_done: float | None = None  # when the first step (after the evaluation at start) ended
        self.half: tuple[int, float] | None = None  # (step, when) halfway to the plan

    def _mark(self, step: int) -> None:
        if step == self.first + 1:
            self.first_done = clock()
        if step == self.at // 2 and step > self.first + 1:
            self.half = step, clock()

    def due(self, step: int, state: dict) -> bool:
        return self.seconds > 0 and step == self.at and step > self.first and "planned_steps" not in state

    def keep_to(self, run, step: int):
        """The fit ``run``'s config after ``step``: when due, its steps planned (said, logged, and kept in
        the state that checkpoints save)."""
        if self.seconds and step < self.at:
            self._mark(step)
        if not self.due(step, run.state):
            return run.cfg
        asked = run.cfg.steps
        planned, per_step = self.plan(step, asked, run.cfg.eval_every)
        run.set_steps(planned)
        run.state["planned_steps"] = planned
        run.bar.total = planned
        run.bar.refresh()
        run.bar.write(
            f"train.time_budget: {planned:,} of {asked:,} steps fit in {self.seconds / 60:g} min at "
            f"{per_step:.2f} s a step; the learning rate decays over {planned:,}"
        )
        run.logger.log(step, "budget", {"planned_steps": planned, "asked_steps": asked})
        return run.cfg

    def plan(self, step: int, steps: int, eval_every: int) -> tuple[int, float]:
        """(steps that fit in the budget, never fewer than done nor more than ``steps``; seconds a step)."""
        now = clock()
        first_done = self.first_done if self.first_done is not None else now
        since_step, since = self.half or (self.first + 1, first_done)
        per_step = (now - since) / max(1, step - since_step) if step > since_step else now - self.begun
        # the evaluation before the first step (and the first step's start-up): what each one ahead costs,
        # the last one (always run) taken off what is left
        evaluation = max(0.0, first_done - self.begun - per_step)
        left = self.seconds - (now - self.begun) - evaluation
        fits = step + int(left / (per_step + (evaluation / eval_every if eval_every else 0.0)))
        planned = max(step, min(steps, fits))
        if ddp.active():  # the first process's plan for all
            planned = int(ddp.sum_all([float(planned) if ddp.is_main() else 0.0])[0])
        return planned, per_step
