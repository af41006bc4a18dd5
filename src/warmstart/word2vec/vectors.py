"""Trained word vectors: a word list and a float32 matrix, with cosine neighbours."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from warmstart.errors import WarmstartError


@dataclass
class WordVectors:
    """``vectors[i]`` is the vector of ``words[i]``; words are ordered by corpus frequency, most frequent
    first (so "the top-N vocabulary" is ``words[:N]``)."""

    words: list[str]
    vectors: np.ndarray
    counts: np.ndarray | None = None
    index: dict[str, int] = field(init=False, repr=False)
    _unit: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self):
        self.vectors = np.ascontiguousarray(self.vectors, dtype=np.float32)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.words):
            raise WarmstartError(
                f"{len(self.words)} words but a vector matrix of shape {tuple(self.vectors.shape)}",
                "give one row per word",
            )
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words):
            raise WarmstartError("the word list has duplicates", "give each word once")

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self._id(word)]

    def _id(self, word: str) -> int:
        if word not in self.index:
            raise WarmstartError(
                f"'{word}' is not in the vocabulary", "try another word or a lower min_count"
            )
        return self.index[word]

    def unit(self) -> np.ndarray:
        """Rows scaled to length 1 (zero rows stay zero); cached."""
        if self._unit is None:
            norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)
            self._unit = self.vectors / np.maximum(norms, 1e-12)
        return self._unit

    def most_similar(
        self, positive: list[str], negative: list[str] = (), topn: int = 10, restrict: int | None = None
    ) -> list[tuple[str, float]]:
        """Words nearest (cosine) to the sum of unit positive minus unit negative vectors (3CosAdd for
        ``positive=[b, c], negative=[a]``), the query words excluded, searched in the first ``restrict``."""
        unit = self.unit()
        query_ids = [self._id(w) for w in [*positive, *negative]]
        target = unit[[self._id(w) for w in positive]].sum(0)
        if negative:
            target = target - unit[[self._id(w) for w in negative]].sum(0)
        target = target / max(float(np.linalg.norm(target)), 1e-12)
        limit = len(self.words) if restrict is None else min(restrict, len(self.words))
        scores = unit[:limit] @ target
        scores[[i for i in query_ids if i < limit]] = -np.inf
        k = min(topn, limit - len(set(i for i in query_ids if i < limit)))
        if k <= 0:
            return []
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self.words[i], float(scores[i])) for i in best]

    def similarity(self, a: str, b: str) -> float:
        unit = self.unit()
        return float(unit[self._id(a)] @ unit[self._id(b)])
