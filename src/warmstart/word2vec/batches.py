"""Training examples for word2vec, made by a compiled loop over the corpus ids (numba).

The corpus is cut into chunks of whole documents. For each (epoch, chunk) a generator seeded by
(seed, epoch, chunk) draws, as word2vec.c and gensim do: which words frequent-word subsampling keeps (a new
draw each epoch; windows are taken over the kept words), a window size in 1..window for each kept centre
word, and its negative samples (from the noise distribution, by Walker's alias method). Windows never cross
a document boundary. Examples come out in corpus order, one per centre word with a context.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from warmstart.nn.splitmix import GAMMA, mix


class NoiseSampler:
    """Walker's alias tables of a fixed distribution: a slot drawn uniformly is kept with probability
    ``accept[slot]``, else replaced by ``alias[slot]``; exact, O(1) a draw (make_examples draws)."""

    def __init__(self, probs: np.ndarray):
        n = len(probs)
        scaled = np.asarray(probs, dtype=np.float64) * n / np.sum(probs)
        self.accept = np.ones(n, dtype=np.float64)
        self.alias = np.arange(n, dtype=np.int64)
        small = [i for i in range(n) if scaled[i] < 1.0]
        large = [i for i in range(n) if scaled[i] >= 1.0]
        while small and large:
            s, big = small.pop(), large[-1]
            self.accept[s], self.alias[s] = scaled[s], big
            scaled[big] -= 1.0 - scaled[s]
            if scaled[big] < 1.0:
                small.append(large.pop())


def chunk_bounds(offsets: np.ndarray, words: int) -> np.ndarray:
    """Document indices cutting the corpus into chunks of about ``words`` ids: chunk k holds documents
    ``bounds[k]:bounds[k + 1]`` (whole documents, so a chunk can be longer)."""
    cuts = np.searchsorted(offsets, np.arange(words, offsets[-1], words))
    return np.unique(np.concatenate([[0], cuts, [len(offsets) - 1]]))


@dataclass
class Examples:
    """One chunk's examples in corpus order, one per centre word (every kept word with a context): the
    centre ``words[i]``, its context ids ``inputs[starts[i]:starts[i + 1]]`` and its ``negatives[i]``
    (a negative equal to the centre is skipped in training, as word2vec.c and gensim skip it); ``position``
    is the centre's index in the corpus ids (for the learning-rate schedule); ``kept`` counts the words that
    subsampling kept. Skip-gram trains each (context word, centre) pair; CBOW the context's mean."""

    words: np.ndarray
    inputs: np.ndarray
    starts: np.ndarray
    negatives: np.ndarray
    position: np.ndarray
    kept: int = 0

    def __len__(self) -> int:
        return len(self.words)

    @property
    def pairs(self) -> int:
        return len(self.inputs)


def make_examples(
    ids: np.ndarray,
    doc: np.ndarray,
    first: int,
    keep: np.ndarray,
    noise: NoiseSampler,
    window: int,
    negative: int,
    seed: int,
) -> Examples:
    """Examples for the corpus slice ``ids`` (its first id at corpus index ``first``; ``doc`` the document of
    each id); ``keep`` is the subsampling keep-probability of each vocabulary word; ``seed`` seeds the draws
    (the same seed, the same examples)."""
    arrays = _examples(ids, doc, keep, noise.accept, noise.alias, window, negative, seed)
    words, inputs, starts, negatives, kept_at, kept = arrays
    return Examples(words, inputs, starts, negatives, first + kept_at, int(kept))


@numba.njit(nogil=True, cache=True)
def _uniform(state):
    """(a uniform draw in [0, 1), the next state): splitmix64 (Steele et al. 2014), a few ns a draw."""
    state = state + GAMMA
    return np.float64(mix(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0), state


@numba.njit(nogil=True, cache=True)
def _examples(ids, doc, keep, accept, alias, window, negative, seed):
    state = np.uint64(seed)
    n = len(ids)
    at = np.empty(n, np.int64)  # the kept words' positions in ids
    kept = 0
    for i in range(n):
        p = keep[ids[i]]
        if p < 1.0:  # a word always kept draws nothing
            r, state = _uniform(state)
            if r >= p:
                continue
        at[kept] = i
        kept += 1
    lo = np.empty(kept, np.int64)  # each kept word's context: kept words lo[c]..hi[c], itself excluded
    hi = np.empty(kept, np.int64)
    total, centres = 0, 0
    for c in range(kept):
        r, state = _uniform(state)
        reach = min(int(r * window), window - 1) + 1
        a, b, d = c, c, doc[at[c]]
        while a > 0 and c - a < reach and doc[at[a - 1]] == d:
            a -= 1
        while b < kept - 1 and b - c < reach and doc[at[b + 1]] == d:
            b += 1
        lo[c], hi[c] = a, b
        total += b - a
        centres += b > a
    words = np.empty(centres, np.int64)
    position = np.empty(centres, np.int64)
    starts = np.zeros(centres + 1, np.int64)
    inputs = np.empty(total, np.int64)
    negatives = np.empty((centres, negative), np.int64)
    m, e = 0, 0
    for c in range(kept):
        if hi[c] == lo[c]:
            continue
        words[m], position[m] = ids[at[c]], at[c]
        for x in range(lo[c], hi[c] + 1):
            if x != c:
                inputs[e] = ids[at[x]]
                e += 1
        starts[m + 1] = e
        for k in range(negative):  # one uniform draw: its integer part the slot, its fraction the coin
            r, state = _uniform(state)
            u = r * len(accept)
            slot = min(int(u), len(accept) - 1)
            negatives[m, k] = slot if u - slot < accept[slot] else alias[slot]
        m += 1
    return words, inputs, starts, negatives, position, kept
