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
    """Batches of example indices, a fresh seeded permutation every epoch.

    With ``lengths``, examples of similar length are batched together (less padding): each epoch's
    permutation is cut into groups of ``group`` batches, each group sorted by length and cut into batches,
    and the batches shuffled. Still a pure function of (seed, epoch).
    """

    def __init__(
        self,
        n: int,
        batch_size: int,
        seed: int,
        drop_last: bool = True,
        shuffle: bool = True,
        lengths=None,
        group: int = 50,
    ):
        if n <= 0:
            raise ValueError("no examples to order")
        self.n, self.batch_size, self.seed, self.shuffle = n, batch_size, seed, shuffle
        self.lengths = None if lengths is None else np.asarray(lengths)
        self.group = group
        self.batches_per_epoch = n // batch_size if drop_last else -(-n // batch_size)
        if self.batches_per_epoch == 0:
            self.batches_per_epoch = 1  # fewer examples than one batch: use them all as one batch
        self._epoch, self._batches = -1, None

    def position(self, index: int) -> tuple[int, int]:
        return divmod(index, self.batches_per_epoch)

    def _epoch_batches(self, epoch: int) -> list[np.ndarray]:
        if epoch != self._epoch:
            rng = np.random.default_rng([self.seed, epoch])
            perm = rng.permutation(self.n) if self.shuffle else np.arange(self.n)
            b = self.batch_size
            if self.lengths is None:
                batches = [perm[k * b : (k + 1) * b] for k in range(self.batches_per_epoch)]
            else:
                batches = []
                for start in range(0, self.n, b * self.group):
                    chunk = perm[start : start + b * self.group]
                    chunk = chunk[np.argsort(-self.lengths[chunk], kind="stable")]
                    batches += [chunk[j : j + b] for j in range(0, len(chunk), b)]
                batches = [batches[i] for i in rng.permutation(len(batches))]
            self._epoch, self._batches = epoch, batches
        return self._batches

    def indices(self, index: int) -> np.ndarray:
        epoch, k = self.position(index)
        return self._epoch_batches(epoch)[k]
