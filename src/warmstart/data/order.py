"""Seeded data order as a pure function of the micro-batch index: resuming is O(1) and replays nothing.

Micro-batch ``i`` belongs to epoch ``i // batches_per_epoch``; each epoch is a fresh seeded permutation.
:class:`EpochOrder` draws the permutation as an array (fine for in-memory finetuning sets, and it can group
by length); :class:`WindowOrder` computes it index by index (a Feistel network), so pretraining over
billions of tokens holds no array of all windows.
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


_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a fast, well-mixing uint64 -> uint64 function (wraps mod 2**64)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX[0]
    z = (z ^ (z >> np.uint64(27))) * _MIX[1]
    return z ^ (z >> np.uint64(31))


class FeistelPermutation:
    """A seeded bijection of ``range(n)`` evaluated per index in O(1) memory.

    A balanced Feistel network (6 rounds, splitmix64 round function) permutes the ``2h``-bit numbers,
    ``4**h >= n``; values that land outside ``range(n)`` are permuted again (cycle walking) until they
    land inside, which keeps it a bijection of ``range(n)`` (fewer than 4 rounds of walking on average).
    """

    ROUNDS = 6

    def __init__(self, n: int, key):
        if not 0 < n <= 2**62:
            raise ValueError(f"n must be in 1..2**62, got {n}")
        self.n = int(n)
        self.half = max(1, ((self.n - 1).bit_length() + 1) // 2)
        self.mask = np.uint64((1 << self.half) - 1)
        self.keys = np.random.SeedSequence(key).generate_state(self.ROUNDS, dtype=np.uint64)

    def _round_trip(self, x: np.ndarray) -> np.ndarray:
        h = np.uint64(self.half)
        left, right = x >> h, x & self.mask
        for k in self.keys:
            left, right = right, left ^ (_mix(right ^ k) & self.mask)
        return (left << h) | right

    def __call__(self, indices) -> np.ndarray:
        x = np.asarray(indices, dtype=np.int64)
        if x.size and (x.min() < 0 or x.max() >= self.n):
            raise IndexError(f"indices must be in 0..{self.n - 1}")
        x = x.astype(np.uint64)
        out = self._round_trip(x)
        outside = out >= np.uint64(self.n)
        while outside.any():
            out[outside] = self._round_trip(out[outside])
            outside = out >= np.uint64(self.n)
        return out.astype(np.int64)


class WindowOrder:
    """Batches of window indices, each epoch a fresh seeded :class:`FeistelPermutation` of all windows.

    Batch ``k`` of epoch ``e`` is ``perm_e(k*b ... k*b + b - 1)``: O(1) memory whatever the corpus size,
    O(batch) work for any micro-batch index, so resuming at step N costs the same as step 0. The last
    ``n % b`` positions of each epoch's permutation are dropped (a different set every epoch).
    """

    def __init__(self, n: int, batch_size: int, seed: int):
        if n <= 0:
            raise ValueError("no examples to order")
        self.n, self.seed = n, seed
        self.batch_size = min(batch_size, n)  # fewer examples than one batch: use them all as one batch
        self.batches_per_epoch = n // self.batch_size
        self._epoch, self._perm = -1, None

    def position(self, index: int) -> tuple[int, int]:
        return divmod(index, self.batches_per_epoch)

    def indices(self, index: int) -> np.ndarray:
        epoch, k = self.position(index)
        if epoch != self._epoch:
            self._epoch, self._perm = epoch, FeistelPermutation(self.n, [self.seed, epoch, 0x57494E44])
        b = self.batch_size
        return self._perm(np.arange(k * b, (k + 1) * b, dtype=np.int64))
