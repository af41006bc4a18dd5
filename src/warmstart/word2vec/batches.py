"""Training examples for word2vec, made with array operations over the corpus ids (no per-word Python loop).

The corpus is cut into chunks of whole documents. For each (epoch, chunk) a generator seeded by
(seed, epoch, chunk) draws, as word2vec.c and gensim do: which words frequent-word subsampling keeps (a new
draw each epoch; windows are taken over the kept words), a window size in 1..window for each kept centre
word, and the negative samples. Windows never cross a document boundary. Examples come out in corpus order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class NoiseSampler:
    """Draws word ids from a fixed distribution in O(1) each (Walker's alias method; exact, no table)."""

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

    def sample(self, rng: np.random.Generator, shape) -> np.ndarray:
        slot = rng.integers(0, len(self.accept), size=shape)
        return np.where(rng.random(shape) < self.accept[slot], slot, self.alias[slot])


def chunk_bounds(offsets: np.ndarray, words: int) -> np.ndarray:
    """Document indices cutting the corpus into chunks of about ``words`` ids: chunk k holds documents
    ``bounds[k]:bounds[k + 1]`` (whole documents, so a chunk can be longer)."""
    cuts = np.searchsorted(offsets, np.arange(words, offsets[-1], words))
    return np.unique(np.concatenate([[0], cuts, [len(offsets) - 1]]))


def windows(doc: np.ndarray, reach: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(ok, ctx): ``ctx[i, j]`` is the position of the j-th candidate context of word i (offsets -window..-1,
    1..window) and ``ok[i, j]`` says whether it lies within ``reach[i]`` of i in the same document."""
    n = len(doc)
    offsets = np.r_[-window:0, 1 : window + 1]
    ctx = np.arange(n)[:, None] + offsets
    ok = (np.abs(offsets) <= reach[:, None]) & (ctx >= 0) & (ctx < n)
    ok &= doc[np.clip(ctx, 0, max(n - 1, 0))] == doc[:, None]
    return ok, ctx


@dataclass
class Examples:
    """One chunk's examples in corpus order. Skip-gram: example i is (``inputs[i]`` -> ``targets[i]``).
    CBOW: example i is (the context ids ``inputs[starts[i]:starts[i + 1]]`` -> ``targets[i]``).
    ``targets[:, 0]`` is the word to predict, ``targets[:, 1:]`` negatives; ``valid`` is 0 for a negative
    equal to the word to predict (skipped, as word2vec.c and gensim skip it) and 1 elsewhere; ``position``
    is the centre word's index in the corpus ids (for the learning-rate schedule); ``kept`` counts the words
    that subsampling kept."""

    inputs: np.ndarray
    targets: np.ndarray
    valid: np.ndarray
    position: np.ndarray
    starts: np.ndarray | None = None
    kept: int = 0

    def __len__(self) -> int:
        return len(self.targets)


def make_examples(
    ids: np.ndarray,
    doc: np.ndarray,
    first: int,
    keep: np.ndarray,
    noise: NoiseSampler,
    window: int,
    negative: int,
    cbow: bool,
    rng: np.random.Generator,
) -> Examples:
    """Examples for the corpus slice ``ids`` (its first id at corpus index ``first``; ``doc`` the document of
    each id); ``keep`` is the subsampling keep-probability of each vocabulary word."""
    kept = np.flatnonzero(rng.random(len(ids)) < keep[ids])
    words = ids[kept]
    ok, ctx = windows(doc[kept], rng.integers(1, window + 1, size=len(kept)), window)
    if cbow:
        counts = ok.sum(1)
        centre = np.flatnonzero(counts)
        inputs = words[ctx[ok]]
        starts = np.zeros(len(centre) + 1, dtype=np.int64)
        np.cumsum(counts[centre], out=starts[1:])
        predict = words[centre]
    else:
        rows, cols = np.nonzero(ok)
        centre, inputs, starts = rows, words[rows], None
        predict = words[ctx[rows, cols]]
    targets = np.empty((len(predict), negative + 1), dtype=np.int64)
    targets[:, 0] = predict
    targets[:, 1:] = noise.sample(rng, (len(predict), negative))
    valid = (targets != predict[:, None]).astype(np.float32)
    valid[:, 0] = 1.0
    return Examples(inputs, targets, valid, first + kept[centre], starts, len(kept))
