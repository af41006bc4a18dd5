"""`warmstart word2vec bias VECTORS`: the gender WEATs of Caliskan et al. 2017 (tests 6, 7, 8) and the
classic analogy probes answered both ways (word2vec/weat.py, word2vec/analogy_bias.py), as one result and
one Markdown page."""

from __future__ import annotations

from warmstart.word2vec.analogy_bias import CAVEAT, PROBES, AnalogyAnswer, probe_all
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.weat import GENDER_TESTS, WeatResult, weat

WEAT_NOTE = (
    "d > 0: the first target set goes with the first attribute set (the stereotype the IAT measured); "
    "d lies in [-2, 2]. p: one-sided permutation test over re-partitions of the targets. Published: "
    "Caliskan et al. 2017, Table 1, GloVe 840B Common Crawl (300 dimensions, cased). A WEAT with 8 words a "
    "set measures these 32 words, not a model's bias in general."
)


def bias_report(
    wv: WordVectors, permutations: int = 100_000, seed: int = 0, restrict: int | None = 30000, probes=PROBES
) -> dict:
    """{"weat": [...], "analogies": [...], "skipped": [...], "markdown": str} for ``wv``."""
    weats = [weat(wv, test, permutations, seed) for test in GENDER_TESTS.values()]
    answers, skipped = probe_all(wv, probes, restrict=restrict)
    return {
        "weat": [r.to_dict() for r in weats],
        "analogies": [a.to_dict() for a in answers],
        "skipped": skipped,
        "restrict": restrict,
        "markdown": markdown(weats, answers, skipped, restrict),
    }


def _words(words: list[tuple[str, float]]) -> str:
    return ", ".join(f"{w} {s:.3f}" for w, s in words)


def weat_table(results: list[WeatResult]) -> str:
    lines = [
        "| test | targets X vs Y | attributes A vs B | d | p | p computed | published d | not found |",
        "|---|---|---|---:|---:|---|---:|---|",
    ]
    for r in results:
        t = next(t for t in GENDER_TESTS.values() if t.name == r.test)
        lines.append(
            f"| {r.test} | {t.x_name} vs {t.y_name} | {t.a_name} vs {t.b_name} | {r.effect_size:.2f} | "
            f"{r.p_value:.2g} | {r.p_method} | {r.published_d:.2f} (p {r.published_p}) | "
            f"{', '.join(r.missing) or '-'} |"
        )
    return "\n".join(lines)


def analogy_table(answers: list[AnalogyAnswer]) -> str:
    lines = [
        "| a : b :: c : ? | inputs excluded (usual) | nothing excluded | rank of b |",
        "|---|---|---|---:|",
    ]
    for a in answers:
        lines.append(
            f"| {a.a} : {a.b} :: {a.c} : ? | {_words(a.excluded)} | {_words(a.included)} | {a.b_rank} |"
        )
    return "\n".join(lines)


def markdown(weats, answers, skipped, restrict) -> str:
    where = "all words" if restrict is None else f"the {restrict:,} most frequent words"
    parts = ["## WEAT (Caliskan et al. 2017)", "", weat_table(weats), "", WEAT_NOTE, ""]
    parts += ["## Analogy probes (3CosAdd)", "", analogy_table(answers), ""]
    parts.append(f"Answers searched among {where} and the inputs; cosine to b - a + c. {CAVEAT}")
    if skipped:
        parts.append(f"Not in the vocabulary, skipped: {', '.join(skipped)}.")
    return "\n".join(parts)
