"""The Word Embedding Association Test (WEAT; Caliskan, Bryson and Narayanan 2017, Science 356:183-186).

Two target sets X, Y (e.g. math and arts words) and two attribute sets A, B (male and female terms). For a
word w, ``s(w, A, B) = mean cos(w, a) - mean cos(w, b)``; the effect size is
``(mean_{x in X} s(x, A, B) - mean_{y in Y} s(y, A, B)) / std_{w in X u Y} s(w, A, B)``, a Cohen's d in
[-2, 2]; positive means X goes with A and Y with B. The standard deviation is the sample one (n - 1) over
the pooled X u Y, as the sweater and PsychWordVec packages read the paper (gesistsa/sweater#39); dividing
by n instead makes d larger by sqrt(n / (n - 1)), 3.3% for 16 words.

The test statistic is ``sum_x s(x, A, B) - sum_y s(y, A, B)``; its one-sided p-value is the share of the
equal-size re-partitions (X_i, Y_i) of X u Y whose statistic is at least the observed one. With up to
``EXACT_LIMIT`` partitions they are all enumerated (C(16, 8) = 12,870 for the tests here); beyond that,
``permutations`` random ones (seeded) are drawn and p = (1 + hits) / (1 + permutations) (Phipson and Smyth
2010: never 0). The paper writes ``>`` where this counts ``>=``: enumerated, the observed partition counts
itself, so p here is the paper's plus 1 / C(16, 8) (7.8e-5), and never 0.

Words are looked up as written, then lowercased (GloVe 6B and warmstart's own vectors are lowercase: the
names and "Einstein", "NASA", "Shakespeare" are found as "john", "nasa", ...). Words in no form are dropped
and reported; the permutations then split X u Y into the sizes that remain.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from warmstart.errors import WarmstartError
from warmstart.word2vec.vectors import WordVectors

EXACT_LIMIT = 1_000_000  # partitions enumerated at most; more: sampled


@dataclass(frozen=True)
class WeatTest:
    """One WEAT with its published word sets and result (Caliskan et al. 2017, Table 1: GloVe 840B
    Common Crawl vectors, and the human IAT effect it replicates)."""

    name: str
    x_name: str
    y_name: str
    a_name: str
    b_name: str
    x: tuple[str, ...]
    y: tuple[str, ...]
    a: tuple[str, ...]
    b: tuple[str, ...]
    published_d: float
    published_p: str


# The word sets of Caliskan et al. 2017 (supplementary material, stimuli of WEATs 6-8, which take them from
# Nosek, Banaji and Greenwald 2002), checked against public copies of them (e.g. the WEAT reimplementations
# that ship the lists for tests 1-10; one of those has "he" for "her" in WEAT 8's female terms, a typo the
# others do not share). Order and spelling as published; case is handled at look-up.
GENDER_TESTS = {
    "weat6": WeatTest(
        "WEAT 6", "male names", "female names", "career", "family",
        ("John", "Paul", "Mike", "Kevin", "Steve", "Greg", "Jeff", "Bill"),
        ("Amy", "Joan", "Lisa", "Sarah", "Diana", "Kate", "Ann", "Donna"),
        ("executive", "management", "professional", "corporation", "salary", "office", "business", "career"),
        ("home", "parents", "children", "family", "cousins", "marriage", "wedding", "relatives"),
        1.81, "< 1e-3",
    ),
    "weat7": WeatTest(
        "WEAT 7", "math", "arts", "male terms", "female terms",
        ("math", "algebra", "geometry", "calculus", "equations", "computation", "numbers", "addition"),
        ("poetry", "art", "dance", "literature", "novel", "symphony", "drama", "sculpture"),
        ("male", "man", "boy", "brother", "he", "him", "his", "son"),
        ("female", "woman", "girl", "sister", "she", "her", "hers", "daughter"),
        1.06, "0.018",
    ),
    "weat8": WeatTest(
        "WEAT 8", "science", "arts", "male terms", "female terms",
        ("science", "technology", "physics", "chemistry", "Einstein", "NASA", "experiment", "astronomy"),
        ("poetry", "art", "Shakespeare", "dance", "literature", "novel", "symphony", "drama"),
        ("brother", "father", "uncle", "grandfather", "son", "he", "his", "him"),
        ("sister", "mother", "aunt", "grandmother", "daughter", "she", "hers", "her"),
        1.24, "1e-2",
    ),
}  # fmt: skip


@dataclass
class WeatResult:
    test: str
    effect_size: float
    statistic: float
    p_value: float
    p_method: str  # "exact (N partitions)" or "N random partitions, seed S"
    sizes: dict[str, int]  # words used per set
    missing: list[str] = field(default_factory=list)  # words in no form in the vocabulary
    published_d: float | None = None
    published_p: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def find(wv: WordVectors, word: str) -> str | None:
    """``word`` as written, else lowercased, when the vocabulary has it; else None."""
    for form in (word, word.lower()):
        if form in wv:
            return form
    return None


def association(wv: WordVectors, words: list[str], a: list[str], b: list[str]) -> np.ndarray:
    """s(w, A, B) for each of ``words`` (all in the vocabulary): mean cosine to A minus mean cosine to B."""
    unit = wv.unit().astype(np.float64)
    rows = lambda ws: unit[[wv.index[w] for w in ws]]  # noqa: E731
    w = rows(words)
    return (w @ rows(a).T).mean(1) - (w @ rows(b).T).mean(1)


def effect_size(s_x: np.ndarray, s_y: np.ndarray) -> float:
    """(mean s_x - mean s_y) / sample std of s over X u Y; nan when that std is 0."""
    pooled = np.concatenate([s_x, s_y])
    std = float(pooled.std(ddof=1)) if len(pooled) > 1 else 0.0
    return float(s_x.mean() - s_y.mean()) / std if std > 0 else math.nan


def p_value(
    s_x: np.ndarray, s_y: np.ndarray, permutations: int = 100_000, seed: int = 0, exact_limit=EXACT_LIMIT
) -> tuple[float, str]:
    """(one-sided p, how it was computed): the share of re-partitions of X u Y into sets of the same sizes
    whose statistic sum(s_X_i) - sum(s_Y_i) is at least the observed one (see the module docstring); all
    of them when there are at most ``exact_limit``, else ``permutations`` random ones."""
    pooled = np.concatenate([s_x, s_y])
    n, k, total = len(pooled), len(s_x), float(pooled.sum())
    observed = 2 * float(s_x.sum()) - total
    tolerance = 1e-9 * max(1.0, float(np.abs(pooled).sum()))  # the observed partition, summed another way
    count = math.comb(n, k)
    if count <= exact_limit:
        hits, done = 0, 0
        combos = itertools.combinations(range(n), k)
        while chunk := list(itertools.islice(combos, 65536)):
            stats = 2 * pooled[np.asarray(chunk, dtype=np.int64)].sum(1) - total
            hits += int((stats >= observed - tolerance).sum())
            done += len(chunk)
        return hits / done, f"exact ({count:,} partitions)"
    if permutations < 1:
        raise WarmstartError(f"permutations must be at least 1, got {permutations}", "e.g. 100000")
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, 8192):
        m = min(8192, permutations - start)
        picks = np.argsort(rng.random((m, n)), axis=1)[:, :k]
        hits += int((2 * pooled[picks].sum(1) - total >= observed - tolerance).sum())
    return (1 + hits) / (1 + permutations), f"{permutations:,} random partitions, seed {seed}"


def weat(wv: WordVectors, test: WeatTest, permutations: int = 100_000, seed: int = 0) -> WeatResult:
    """The WEAT ``test`` on ``wv``: effect size, permutation p-value, the words not found."""
    found, missing = {}, []
    for key in ("x", "y", "a", "b"):
        words = [(w, find(wv, w)) for w in getattr(test, key)]
        missing += [w for w, f in words if f is None]
        found[key] = [f for _, f in words if f is not None]
    empty = [getattr(test, f"{k}_name") for k, ws in found.items() if not ws]
    if empty:
        raise WarmstartError(
            f"{test.name}: no word of {', '.join(empty)} is in the vocabulary ({len(wv):,} words)",
            "use vectors trained on more text, or a lower min_count",
        )
    s_x = association(wv, found["x"], found["a"], found["b"])
    s_y = association(wv, found["y"], found["a"], found["b"])
    p, how = p_value(s_x, s_y, permutations, seed)
    return WeatResult(
        test.name,
        effect_size(s_x, s_y),
        float(s_x.sum() - s_y.sum()),
        p,
        how,
        {k: len(v) for k, v in found.items()},
        missing,
        test.published_d,
        test.published_p,
    )
