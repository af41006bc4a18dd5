"""The word2vec vocabulary: counts, frequent-word subsampling, the negative-sampling noise, corpus ids.

Words are ordered most frequent first, ties by first occurrence in the corpus, so the order is deterministic.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from warmstart.errors import WarmstartError


@dataclass
class Vocab:
    """``words[i]`` occurs ``counts[i]`` times in the corpus; ``index`` maps a word to its id."""

    words: list[str]
    counts: np.ndarray
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self):
        self.counts = np.asarray(self.counts, dtype=np.int64)
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    @property
    def total(self) -> int:
        """Occurrences of vocabulary words in the corpus (rarer words left out)."""
        return int(self.counts.sum())

    @classmethod
    def build(cls, docs: list[list[str]], min_count: int = 5, max_vocab: int | None = None) -> Vocab:
        """Words seen at least ``min_count`` times, the ``max_vocab`` most frequent of them (None: all)."""
        counter = Counter(itertools.chain.from_iterable(docs))  # insertion order = first occurrence
        if not counter:
            raise WarmstartError("the corpus has no words", "give documents with text in them")
        ranked = sorted(counter.items(), key=lambda kv: -kv[1])  # stable: ties keep first occurrence
        kept = [(w, c) for w, c in ranked if c >= min_count][: max_vocab or None]
        if not kept:
            raise WarmstartError(
                f"no word occurs min_count={min_count} times (the most frequent occurs {ranked[0][1]} times)",
                f"set min_count to {ranked[0][1]} or lower, or train on more text",
            )
        return cls([w for w, _ in kept], np.array([c for _, c in kept], dtype=np.int64))

    def keep_probs(self, sample: float) -> np.ndarray:
        """Probability of keeping each occurrence of a word (Mikolov subsampling as word2vec.c and gensim
        compute it): ``(sqrt(f / t) + 1) * t / f`` capped at 1, f the word's count, t = sample * total.
        ``sample <= 0`` keeps every word."""
        if sample <= 0:
            return np.ones(len(self), dtype=np.float64)
        f = self.counts.astype(np.float64)
        t = sample * self.total
        return np.minimum(1.0, (np.sqrt(f / t) + 1.0) * t / f)

    def noise_distribution(self, power: float = 0.75) -> np.ndarray:
        """The negative-sampling distribution: counts ** power, normalised to sum to 1."""
        weights = self.counts.astype(np.float64) ** power
        return weights / weights.sum()

    def encode(self, docs: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """(ids, offsets): the ids of all vocabulary words in corpus order (other words are dropped, as gensim
        drops them) and document ``d``'s ids as ``ids[offsets[d]:offsets[d + 1]]``."""
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        words = itertools.chain.from_iterable(docs)
        ids = np.fromiter(
            map(self.index.get, words, itertools.repeat(-1)), dtype=np.int64, count=lengths.sum()
        )
        known = ids >= 0
        doc_of_word = np.repeat(np.arange(len(docs)), lengths)
        offsets = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(np.bincount(doc_of_word[known], minlength=len(docs)), out=offsets[1:])
        return ids[known], offsets
