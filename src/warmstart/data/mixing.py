"""Mixing several datasets in training batches (T5, section 3.5.2): the rates and a seeded batch source.

With n_i training examples of task i, m tasks and K = the cap:

    proportional   r_i = min(n_i, K) / sum_j min(n_j, K)
    temperature    r_i proportional to (min(n_i, K) / N) ** (1 / T)   (T5: T = 2)
    equal          r_i = 1 / m
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from warmstart.errors import WarmstartError

MIXINGS = ("proportional", "temperature", "equal")
_MIX, _ORDER = 0x6D6978, 0x6F7264  # seed-sequence salts: the task draws and the per-task orders


def check_mixing(mixing: str, temperature: float, cap: int | None) -> None:
    if mixing not in MIXINGS:
        raise WarmstartError(f"unknown multitask.mixing '{mixing}'", f"choose one of: {', '.join(MIXINGS)}")
    if not temperature > 0:
        raise WarmstartError(f"multitask.temperature is {temperature}", "use a temperature above 0 (T5: 2)")
    if cap is not None and cap < 1:
        raise WarmstartError(f"multitask.cap is {cap}", "use a positive size limit, or leave it unset")


def mixing_rates(
    sizes: Sequence[int], mixing: str = "proportional", temperature: float = 2.0, cap: int | None = None
) -> list[float]:
    """Sampling rate of each task from its number of training examples (see the module docstring)."""
    check_mixing(mixing, temperature, cap)
    if not sizes:
        raise WarmstartError("no tasks to mix", "list at least one dataset in multitask.tasks")
    if min(sizes) < 1:
        raise WarmstartError(f"a task has {min(sizes)} training examples", "every task needs examples")
    if mixing == "equal":
        return [1.0 / len(sizes)] * len(sizes)
    capped = [min(n, cap) if cap else n for n in sizes]
    total = sum(capped)
    power = 1.0 if mixing == "proportional" else 1.0 / temperature
    weights = [(n / total) ** power for n in capped]
    return [w / sum(weights) for w in weights]


class MixedBatches:
    """Training micro-batches that mix tasks at given rates; ``batch(i)`` is a pure function of ``i``.

    Row r of batch i comes from task j with probability ``rates[j]`` (uniform draws seeded by (seed, i)).
    The k-th row ever drawn from task j is its example ``perm_e[k mod n_j]``, e = k // n_j, a seeded
    permutation per pass: where task j stands at batch i is the count of its draws in batches 0..i-1, added
    up from those seeded draws (kept every ``STRIDE`` batches, so going on from any batch is cheap).
    """

    STRIDE = 1024

    def __init__(self, features, batch_size: int, seed: int, mixture: Mapping[str, float]):
        self.features, self.batch_size, self.seed = features, batch_size, seed
        self.names = list(mixture)
        rows: dict[str, list[int]] = {name: [] for name in self.names}
        for i, tag in enumerate(features.tasks):
            if tag in rows:
                rows[tag].append(i)
        empty = [name for name, r in rows.items() if not r]
        if empty:
            raise WarmstartError(f"task {empty[0]} has no training rows", "give every task training examples")
        self.rows = [np.asarray(rows[name]) for name in self.names]
        rates = np.asarray([mixture[name] for name in self.names], dtype=np.float64)
        self.rates = rates / rates.sum()
        self.cdf = np.cumsum(self.rates)
        self.cdf[-1] = 1.0
        self.batches_per_epoch = max(1, -(-sum(len(r) for r in self.rows) // batch_size))
        zero = np.zeros(len(self.names), dtype=np.int64)
        self._marks = {0: zero}
        self._last = (0, zero)
        self._perms: dict[tuple[int, int], np.ndarray] = {}

    def picks(self, index: int) -> np.ndarray:
        """The task (an index into ``names``) of every row of micro-batch ``index``."""
        u = np.random.default_rng([self.seed, _MIX, index]).random(self.batch_size)
        return np.minimum(np.searchsorted(self.cdf, u, side="right"), len(self.names) - 1)

    def counts_before(self, index: int) -> np.ndarray:
        """Rows each task gave to micro-batches 0 .. index - 1."""
        start, counts = self._last
        if start > index:  # going back: every multiple of STRIDE up to ``start`` has a mark
            start = index // self.STRIDE * self.STRIDE
            counts = self._marks[start]
        counts = counts.copy()
        for b in range(start, index):
            if b % self.STRIDE == 0:
                self._marks.setdefault(b, counts.copy())
            counts += np.bincount(self.picks(b), minlength=len(self.names))
        if index % self.STRIDE == 0:
            self._marks.setdefault(index, counts.copy())
        self._last = (index, counts)
        return counts.copy()

    def _row(self, j: int, k: int) -> int:
        epoch, at = divmod(k, len(self.rows[j]))
        perm = self._perms.get((j, epoch))
        if perm is None:
            if len(self._perms) > 4 * len(self.names):
                self._perms.clear()
            rng = np.random.default_rng([self.seed, _ORDER, j, epoch])
            perm = self._perms[(j, epoch)] = rng.permutation(len(self.rows[j]))
        return int(self.rows[j][perm[at]])

    def draws(self, index: int) -> list[tuple[int, int]]:
        """(task index, feature row) of every row of micro-batch ``index``, in batch order."""
        seen = self.counts_before(index)
        out = []
        for j in self.picks(index):
            out.append((int(j), self._row(j, int(seen[j]))))
            seen[j] += 1
        return out

    def batch(self, index: int) -> dict:
        return self.features.take([row for _, row in self.draws(index)])

    def position(self, index: int) -> tuple[int, int]:
        return divmod(index, self.batches_per_epoch)
