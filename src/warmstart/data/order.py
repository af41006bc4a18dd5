"""Seeded data order as a pure function of the micro-batch index: resuming is O(1) and replays nothing.

Micro-batch ``i`` belongs to epoch ``i // batches_per_epoch``; each epoch is a fresh seeded permutation.
"""

from __future__ import annotations

import numpy as np
import torch


def step_generator(seed: int, index: int) -> torch.Generator:
    """An independent torch RNG for one (seed, micro-batch) pair, e.g. for the masks of that batch."""
    state = np.random.SeedSequence([seed, index]).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


class EpochOrder:
    def __init__(self, n: int, batch_size: int, seed: int, drop_last: bool = True, shuffle: bool = True):
        if n <= 0:
            raise ValueError("no examples to order")
        self.n, self.batch_size, self.seed, self.shuffle = n, batch_size, seed, shuffle
        self.batches_per_epoch = n // batch_size if drop_last else -(-n // batch_size)
        if self.batches_per_epoch == 0:
            self.batches_per_epoch = 1  # fewer examples than one batch: use them all as one batch
        self._perm_epoch, self._perm = -1, None

    def position(self, index: int) -> tuple[int, int]:
        return divmod(index, self.batches_per_epoch)

    def _permutation(self, epoch: int) -> np.ndarray:
        if epoch != self._perm_epoch:
            rng = np.random.default_rng([self.seed, epoch])
            self._perm = rng.permutation(self.n) if self.shuffle else np.arange(self.n)
            self._perm_epoch = epoch
        return self._perm

    def indices(self, index: int) -> np.ndarray:
        epoch, k = self.position(index)
        perm = self._permutation(epoch)
        return perm[k * self.batch_size : (k + 1) * self.batch_size]
