"""The search's sampler, seeded per trial: trial N draws from a generator seeded by (--sampler-seed, N).

Optuna's samplers hold one generator per process, seeded once. Processes that share a study with the same
seed (``--workers 2``, two machines on one ``--storage``) then draw the same configurations in the same
order, and a resumed search draws its first configurations again: measured with Optuna 5.0, two processes
on one SQLite study each ran learning rates 2.42e-5, 3.16e-5 and 2.64e-5. Trial numbers are unique in a
study, so a generator seeded by the number gives every trial its own draw, whichever process asks it and
whenever, and the same study again when a search is rerun from scratch.

TPE also runs with ``constant_liar``: a running trial counts as a poor result while it runs, so that
processes asking together spread out rather than sample next to each other (Optuna's advice for
distributed TPE).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def trial_seed(seed: int, number: int) -> int:
    """The generator seed of trial ``number`` of a search seeded ``seed``."""
    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


def seeded_sampler(make: Callable[[int], object], seed: int):
    """A sampler that builds ``make(trial_seed(seed, N))`` for trial N and delegates to it."""
    from optuna.samplers import BaseSampler

    class TrialSeeded(BaseSampler):
        def __init__(self) -> None:
            self.inner = make(trial_seed(seed, 0))

        def before_trial(self, study, trial) -> None:
            self.inner = make(trial_seed(seed, trial.number))
            self.inner.before_trial(study, trial)

        def infer_relative_search_space(self, study, trial):
            return self.inner.infer_relative_search_space(study, trial)

        def sample_relative(self, study, trial, search_space):
            return self.inner.sample_relative(study, trial, search_space)

        def sample_independent(self, study, trial, param_name, param_distribution):
            return self.inner.sample_independent(study, trial, param_name, param_distribution)

        def after_trial(self, study, trial, state, values) -> None:
            self.inner.after_trial(study, trial, state, values)

        def reseed_rng(self) -> None:
            self.inner.reseed_rng()

    return TrialSeeded()


def search_sampler(grid: bool, seed: int, trials: int):
    """Random sampling for a grid (its points come enqueued), else TPE after a few random trials."""
    import optuna

    if grid:
        return seeded_sampler(lambda s: optuna.samplers.RandomSampler(seed=s), seed)
    startup = min(8, max(2, trials // 3))
    return seeded_sampler(
        lambda s: optuna.samplers.TPESampler(seed=s, n_startup_trials=startup, constant_liar=True), seed
    )
