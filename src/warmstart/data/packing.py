"""Pack a token stream into fixed-length training sequences, as BERT and RoBERTa do.

Shards hold documents back to back with a separator after each, so window ``i`` is the contiguous slice
``stream[i*w : (i+1)*w]`` wrapped in the family's prefix/suffix tokens (``[CLS] ... [SEP]`` for BERT).
Long documents simply span several windows; nothing is truncated away except the stream's last remainder.
"""

from __future__ import annotations

import numpy as np
import torch

from warmstart.data.order import WindowOrder, step_generator
from warmstart.errors import WarmstartError


class PackedWindows:
    def __init__(self, shards, seq_len: int, prefix: list[int], suffix: list[int]):
        self.shards, self.prefix, self.suffix = shards, prefix, suffix
        self.width = seq_len - len(prefix) - len(suffix)
        if self.width < 1:
            raise WarmstartError(f"sequence length {seq_len} is too short", "use data.seq_len of 8 or more")
        self.count = shards.num_tokens // self.width
        if self.count == 0:
            raise WarmstartError(
                f"the corpus has {shards.num_tokens} tokens, fewer than one sequence of {seq_len}",
                "use more text or a shorter data.seq_len",
            )

    def __len__(self) -> int:
        return self.count

    def get(self, indices) -> torch.Tensor:
        rows = [
            np.concatenate([self.prefix, self.shards.read(int(i) * self.width, self.width), self.suffix])
            for i in indices
        ]
        return torch.from_numpy(np.stack(rows).astype(np.int64))


class WindowBatches:
    """Training batches: micro-batch ``i`` = collate(windows in seeded order, RNG seeded by (seed, i)).

    The order is a :class:`WindowOrder`: computed per batch, no array of all windows is held in memory."""

    def __init__(self, windows: PackedWindows, batch_size: int, seed: int, collate):
        self.windows, self.collate, self.seed = windows, collate, seed
        self.order = WindowOrder(len(windows), batch_size, seed)
        self.batches_per_epoch = self.order.batches_per_epoch

    def batch(self, index: int) -> dict:
        return self.collate(self.windows.get(self.order.indices(index)), step_generator(self.seed, index))

    def position(self, index: int) -> tuple[int, int]:
        return self.order.position(index)


class FixedWindowBatches:
    """Evaluation batches: the first windows in order, with the same masks at every evaluation."""

    def __init__(self, windows: PackedWindows, batch_size: int, max_batches: int, seed: int, collate):
        self.windows, self.batch_size, self.seed, self.collate = windows, batch_size, seed, collate
        self.num_batches = max(1, min(max_batches, -(-len(windows) // batch_size)))
        self.total = self.num_batches if len(windows) else 0  # a progress bar's total

    def __iter__(self):
        for j in range(self.num_batches):
            idx = range(j * self.batch_size, min((j + 1) * self.batch_size, len(self.windows)))
            if len(idx):
                yield self.collate(self.windows.get(idx), step_generator(self.seed + 7919, j))
