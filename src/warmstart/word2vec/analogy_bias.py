"""Gendered analogy probes ("man is to doctor as woman is to ?") answered by 3CosAdd two ways.

The usual way (Mikolov et al. 2013, and `warmstart word2vec analogy`) searches for the word nearest to
b - a + c with a, b and c themselves excluded. Nissim, van Noord and van der Goot (2020, "Fair is better
than sensational: man is to doctor as woman is to doctor", Computational Linguistics 46(2)) show what that
hides: unconstrained, the nearest word is very often b itself (doctor), so excluding the inputs forces a
different answer, and a "nurse" found that way says less about bias than it seems. Both answers are given
here, with the rank b has when nothing is excluded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.weat import find

# (a, b, c): a is to b as c is to ?  Single words; the classics of Bolukbasi et al. 2016 ("computer
# programmer", "homemaker") and of the papers Nissim et al. review, both directions.
PROBES = [
    ("man", "doctor", "woman"),
    ("he", "doctor", "she"),
    ("man", "programmer", "woman"),
    ("he", "programmer", "she"),
    ("man", "engineer", "woman"),
    ("man", "surgeon", "woman"),
    ("man", "carpenter", "woman"),
    ("man", "boss", "woman"),
    ("woman", "nurse", "man"),
    ("she", "homemaker", "he"),
    ("woman", "secretary", "man"),
]
CAVEAT = (
    "3CosAdd with the inputs excluded (the usual convention) must answer something other than b even when "
    "b itself is the nearest word, which inflates apparent bias (Nissim, van Noord and van der Goot 2020, "
    "'Fair is better than sensational'); the answer with nothing excluded and b's rank are shown beside it."
)


@dataclass
class AnalogyAnswer:
    a: str
    b: str
    c: str
    excluded: list[tuple[str, float]]  # top answers, a, b and c excluded
    included: list[tuple[str, float]]  # top answers, nothing excluded
    b_rank: int  # b's rank when nothing is excluded (1: b itself is the answer)

    def to_dict(self) -> dict:
        return asdict(self)


def answer(wv: WordVectors, a: str, b: str, c: str, topn: int = 3, restrict: int | None = 30000):
    """The 3CosAdd answers to "a is to b as c is to ?" among the first ``restrict`` words (None: all) and
    the three inputs, with and without the inputs excluded; None when a word is not in the vocabulary
    (looked up as for WEAT: as written, then lowercased)."""
    words = [find(wv, w) for w in (a, b, c)]
    if None in words:
        return None
    unit = wv.unit()
    ia, ib, ic = (wv.index[w] for w in words)
    target = unit[ib] - unit[ia] + unit[ic]
    target = target / max(float(np.linalg.norm(target)), 1e-12)
    limit = len(wv) if restrict is None else min(restrict, len(wv))
    inputs = {ia, ib, ic}
    searched = np.concatenate([np.arange(limit), sorted(i for i in inputs if i >= limit)]).astype(np.int64)
    ranked = searched[np.argsort(-(unit[searched] @ target), kind="stable")]
    b_rank = int(np.flatnonzero(ranked == ib)[0]) + 1

    def top(skip: set) -> list[tuple[str, float]]:
        kept = [int(i) for i in ranked[: topn + len(skip)] if i not in skip][:topn]
        return [(wv.words[i], round(float(unit[i] @ target), 4)) for i in kept]

    return AnalogyAnswer(*words, top(inputs), top(set()), b_rank)


def probe_all(wv: WordVectors, probes=PROBES, topn: int = 3, restrict: int | None = 30000):
    """(answers, skipped probes as "a:b::c")."""
    answers, skipped = [], []
    for a, b, c in probes:
        got = answer(wv, a, b, c, topn, restrict)
        (answers.append(got) if got else skipped.append(f"{a}:{b}::{c}"))
    return answers, skipped
