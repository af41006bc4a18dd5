"""Intrinsic evaluation of word vectors: analogies (3CosAdd), word-pair similarity (Spearman), neighbours.

The scores equal gensim's ``KeyedVectors.evaluate_word_analogies(path, restrict_vocab=N)`` and
``evaluate_word_pairs(path, restrict_vocab=N)`` on the same vectors (tests compare them):

- Words are looked up case-insensitively by default: a test word matches the most frequent vocabulary word
  with the same upper-case form among the first ``restrict`` words; the rest of the vocabulary is
  out-of-vocabulary (OOV) for the evaluation.
- An analogy "a b c d" (a is to b as c is to d) is answered by the word nearest (cosine) to
  unit(b) - unit(a) + unit(c) among the first ``restrict`` words, a, b and c excluded, and, like gensim,
  also skipping words whose upper-case form is that of a, b or c (other case variants) within the top 5.
  Questions with an OOV word are counted per section and not scored; accuracy = correct / scored.
- Sections start at lines ``": name"``. gensim's result list ends with an extra "Total accuracy" section
  (all sections together); here that is ``AnalogyResult.total``. A section with nothing scored has
  accuracy 0.0, as in gensim. gensim raises on a question line before the first section header; here it
  is skipped and counted as malformed, like lines that are not 4 words. Blank lines are ignored.
- Word pairs: lines ``w1<TAB>w2<TAB>score``; ``#`` lines are comments; a first line whose score is not a
  number is a header. Spearman's rho uses average ranks for ties (as scipy). gensim raises when no pair is
  in the vocabulary; here the result has ``nan`` correlations and ``pairs == 0``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from warmstart.data.packages import package_file
from warmstart.errors import WarmstartError
from warmstart.word2vec.vectors import WordVectors

QUESTIONS = "test/test_data/questions-words.txt"
PAIRS = {"wordsim353": "test/test_data/wordsim353.tsv", "simlex999": "test/test_data/simlex999.txt"}
TOP = 5  # gensim looks at the 5 nearest words for one that is not a case variant of a question word


@dataclass
class Section:
    """Analogy counts of one section (or of several added together)."""

    name: str
    correct: int = 0
    incorrect: int = 0
    oov: int = 0

    @property
    def scored(self) -> int:
        return self.correct + self.incorrect

    @property
    def accuracy(self) -> float:
        return self.correct / self.scored if self.scored else 0.0


@dataclass
class AnalogyResult:
    path: str
    restrict: int | None
    sections: list[Section]
    malformed: int = 0

    def _sum(self, name: str, sections: list[Section]) -> Section:
        return Section(
            name,
            sum(s.correct for s in sections),
            sum(s.incorrect for s in sections),
            sum(s.oov for s in sections),
        )

    @property
    def total(self) -> Section:
        return self._sum("total", self.sections)

    @property
    def semantic(self) -> Section:
        """Sections not named ``gram*`` (Mikolov et al.'s semantic questions)."""
        return self._sum("semantic", [s for s in self.sections if not s.name.startswith("gram")])

    @property
    def syntactic(self) -> Section:
        return self._sum("syntactic", [s for s in self.sections if s.name.startswith("gram")])

    @property
    def accuracy(self) -> float:
        """Correct / scored over all sections (OOV questions excluded): gensim's "Total accuracy"."""
        return self.total.accuracy

    @property
    def questions(self) -> int:
        """Well-formed questions, scored or OOV."""
        return self.total.scored + self.total.oov

    def to_dict(self) -> dict:
        """JSON-able: the fields plus accuracy per section and for semantic, syntactic and total."""
        summary = {s.name: {**asdict(s), "accuracy": s.accuracy} for s in (self.semantic, self.syntactic)}
        return {
            **asdict(self),
            "sections": [{**asdict(s), "accuracy": s.accuracy} for s in self.sections],
            **summary,
            "total": {**asdict(self.total), "accuracy": self.accuracy},
            "accuracy": self.accuracy,
            "questions": self.questions,
        }


@dataclass
class SimilarityResult:
    dataset: str
    path: str
    spearman: float
    pearson: float
    pairs: int
    oov: int
    malformed: int = 0

    @property
    def oov_ratio(self) -> float:
        """Percent of well-formed pairs with an OOV word (gensim's third return value)."""
        return 100.0 * self.oov / (self.pairs + self.oov) if self.pairs + self.oov else 0.0

    def to_dict(self) -> dict:
        """JSON-able (nan correlations become None)."""
        d = asdict(self)
        for key in ("spearman", "pearson"):
            d[key] = None if math.isnan(d[key]) else d[key]
        return {**d, "oov_ratio": self.oov_ratio}


def _data_file(path: str | Path | None, relative: str) -> Path:
    if path is None:
        return package_file("gensim", "gensim", relative)
    path = Path(path)
    if not path.is_file():
        raise WarmstartError(f"the evaluation file {path} does not exist", "check the path")
    return path


def _lines(path: Path) -> list[str]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise WarmstartError(
            f"{path} is not UTF-8 text ({e.reason} at byte {e.start})", "save it as UTF-8"
        ) from None
    return [line.rstrip("\r") for line in text.split("\n")]


def _lookup(
    wv: WordVectors, restrict: int | None, case_insensitive: bool
) -> tuple[dict[str, int], list[str]]:
    """Key -> index of its most frequent word among the first ``restrict`` words; the key of each word."""
    limit = len(wv) if restrict is None else max(0, min(restrict, len(wv)))
    keys = [w.upper() for w in wv.words[:limit]] if case_insensitive else list(wv.words[:limit])
    lookup: dict[str, int] = {}
    for i, key in enumerate(keys):
        lookup.setdefault(key, i)
    return lookup, keys


def analogy(
    wv: WordVectors,
    path: str | Path | None = None,
    restrict: int | None = 30000,
    case_insensitive: bool = True,
) -> AnalogyResult:
    """Accuracy on "a b c d" analogy questions (default: Mikolov et al.'s 19,544 questions-words.txt),
    answered by 3CosAdd among the ``restrict`` most frequent words (None: all)."""
    path = _data_file(path, QUESTIONS)
    lookup, keys = _lookup(wv, restrict, case_insensitive)
    sections: list[Section] = []
    question_sections, question_ids, expected, malformed = [], [], [], 0
    for line in _lines(path):
        if line.startswith(": "):
            sections.append(Section(line.lstrip(": ").strip()))
            continue
        words = line.split()
        if not words:
            continue
        if len(words) != 4 or not sections:
            malformed += 1
            continue
        if case_insensitive:
            words = [w.upper() for w in words]
        if any(w not in lookup for w in words):
            sections[-1].oov += 1
            continue
        question_sections.append(len(sections) - 1)
        question_ids.append([lookup[w] for w in words[:3]])
        expected.append(words[3])
    if not question_sections and not any(s.oov for s in sections):
        raise WarmstartError(
            f"{path} has no analogy questions ({malformed} malformed lines)",
            "give lines of 4 words under ': section' headers",
        )
    predicted = _answers(
        wv.unit()[: len(keys)], np.asarray(question_ids, dtype=np.int64).reshape(-1, 3), keys
    )
    for s, want, got in zip(question_sections, expected, predicted):
        if got == want:
            sections[s].correct += 1
        else:
            sections[s].incorrect += 1
    return AnalogyResult(str(path), restrict, sections, malformed)


def _answers(unit: np.ndarray, ids: np.ndarray, keys: list[str]) -> list[str | None]:
    """The key of the 3CosAdd answer to each question (rows of ``ids`` = a, b, c), in batches."""
    batch = max(1, min(4096, 2**24 // max(len(keys), 1)))
    answers: list[str | None] = []
    for start in range(0, len(ids), batch):
        a, b, c = ids[start : start + batch].T
        target = unit[b] - unit[a] + unit[c]
        target /= np.maximum(np.linalg.norm(target, axis=1, keepdims=True), 1e-12)
        scores = target @ unit.T
        rows = np.arange(len(a))
        for col in (a, b, c):
            scores[rows, col] = -np.inf
        best = scores.argmax(1)
        for r, j in enumerate(best.tolist()):
            question = {keys[a[r]], keys[b[r]], keys[c[r]]}
            if keys[j] not in question:  # the common case
                answers.append(keys[j] if np.isfinite(scores[r, j]) else None)
                continue
            # a case variant of a question word came first: walk the top 5 as gensim does
            order = np.argsort(-scores[r], kind="stable")[:TOP]
            got = None
            for k in order[np.isfinite(scores[r, order])].tolist():
                got = keys[k]
                if got not in question:
                    break
            answers.append(got)
    return answers


def _ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their average rank (scipy.stats.rankdata's default)."""
    if len(x) == 0:
        return np.zeros(0)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.r_[True, sorted_x[1:] != sorted_x[:-1]]
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], len(x)] - 1
    ranks = np.empty(len(x))
    ranks[order] = (first[group] + last[group]) / 2 + 1
    return ranks


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 2:
        return math.nan
    x, y = x - x.mean(), y - y.mean()
    denom = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / denom if denom > 0 else math.nan


def similarity(
    wv: WordVectors,
    path: str | Path | None = None,
    dataset: str = "wordsim353",
    restrict: int | None = None,
    case_insensitive: bool = True,
) -> SimilarityResult:
    """Spearman (and Pearson) correlation between cosine similarity and human scores of word pairs.
    ``dataset``: wordsim353 or simlex999 (the files packaged with gensim); ``path`` reads another file."""
    if path is None and dataset not in PAIRS:
        raise WarmstartError(f"unknown word-pair dataset '{dataset}'", f"use one of {', '.join(PAIRS)}")
    file = _data_file(path, PAIRS.get(dataset, ""))
    lookup, _ = _lookup(wv, restrict, case_insensitive)
    unit = wv.unit()
    gold, model, oov, malformed, seen_data = [], [], 0, 0, False
    for line in _lines(file):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        try:
            score = float(parts[2]) if len(parts) == 3 else None
        except ValueError:
            score = None
        first, seen_data = not seen_data, True
        if score is None:
            malformed += 0 if first and len(parts) == 3 else 1  # a first line like "Word 1  Word 2  Score"
            continue
        a, b = (parts[0].upper(), parts[1].upper()) if case_insensitive else (parts[0], parts[1])
        if a not in lookup or b not in lookup:
            oov += 1
            continue
        gold.append(score)
        model.append(float(unit[lookup[a]].astype(np.float64) @ unit[lookup[b]].astype(np.float64)))
    if not gold and not oov:
        raise WarmstartError(
            f"{file} has no word pairs ({malformed} malformed lines)",
            "give lines 'word1<TAB>word2<TAB>score'",
        )
    g, m = np.asarray(gold, dtype=np.float64), np.asarray(model, dtype=np.float64)
    name = dataset if path is None else Path(path).stem
    rho, r = _pearson(_ranks(g), _ranks(m)), _pearson(g, m)
    return SimilarityResult(name, str(file), rho, r, len(gold), oov, malformed)


def _word(wv: WordVectors, word: str) -> str:
    """``word``, or its lowercase form when only that is in the vocabulary (the tokenizer lowercases)."""
    return word.lower() if word not in wv and word.lower() in wv else word


def neighbours(
    wv: WordVectors, word: str, topn: int = 10, restrict: int | None = None
) -> list[tuple[str, float]]:
    """The ``topn`` words nearest (cosine) to ``word``, among the first ``restrict`` words."""
    return wv.most_similar([_word(wv, word)], topn=topn, restrict=restrict)


def solve(
    wv: WordVectors, a: str, b: str, c: str, topn: int = 10, restrict: int | None = None
) -> list[tuple[str, float]]:
    """Answers to "a is to b as c is to ?" by 3CosAdd (nearest to b - a + c), a, b and c excluded."""
    return wv.most_similar([_word(wv, b), _word(wv, c)], [_word(wv, a)], topn=topn, restrict=restrict)


def _percent(section: Section) -> str:
    return f"{100 * section.accuracy:.1f}%" if section.scored else "n/a"


def _number(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def analogy_table(result: AnalogyResult) -> str:
    """Markdown: one row per section, then semantic, syntactic and total; a note on skipped lines."""
    lines = ["| section | correct | scored | accuracy | OOV |", "|---|---:|---:|---:|---:|"]
    rows = [*result.sections, result.semantic, result.syntactic, result.total]
    for i, s in enumerate(rows):
        name = f"**{s.name}**" if i >= len(result.sections) else s.name
        lines.append(f"| {name} | {s.correct} | {s.scored} | {_percent(s)} | {s.oov} |")
    restrict = "all" if result.restrict is None else f"the {result.restrict:,} most frequent"
    lines.append("")
    lines.append(
        f"{result.questions:,} questions from {Path(result.path).name}, answers searched in {restrict} words"
    )
    if result.malformed:
        lines[-1] += f"; {result.malformed} malformed lines skipped"
    return "\n".join(lines)


def similarity_table(results: list[SimilarityResult] | dict[str, SimilarityResult] | SimilarityResult) -> str:
    """Markdown: one row per word-pair dataset (a list, a name -> result dict, or one result)."""
    if isinstance(results, SimilarityResult):
        results = [results]
    elif isinstance(results, dict):
        results = list(results.values())
    lines = ["| dataset | Spearman rho | Pearson r | pairs | OOV pairs |", "|---|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.dataset} | {_number(r.spearman)} | {_number(r.pearson)} | {r.pairs} | {r.oov} |")
    return "\n".join(lines)


def neighbours_table(results: list[tuple[str, float]], heading: str = "word") -> str:
    """Markdown: rank, word, cosine."""
    lines = [f"| # | {heading} | cosine |", "|---:|---|---:|"]
    lines += [f"| {i} | {w} | {s:.3f} |" for i, (w, s) in enumerate(results, start=1)]
    return "\n".join(lines)
