"""splitmix64 (Steele et al. 2014) for compiled loops (numba): ``mix`` is its finalizer, a fast,
well-mixing uint64 -> uint64 function; ``GAMMA`` its increment. A counter-based stream is
``mix(seed + i * GAMMA)``: the dropout masks (dropout.py) and word2vec's examples (word2vec/batches.py)
draw from it. (data/order.py keeps a numpy copy of the finalizer for its Feistel permutation.)"""

from __future__ import annotations

import numba
import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(nogil=True, cache=True)
def mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
