"""Metrics of generated text against references: ROUGE-1/2/L F-measures (``rouge-score``, with stemming, as
summarisation papers report) and corpus BLEU (``sacrebleu``), both as per-batch sums so evaluation streams.

BLEU keeps sacrebleu's sufficient statistics (lengths and n-gram matches/totals) as totals (stats named
``*_sum``, which the evaluation adds up without averaging); the corpus score comes from sacrebleu itself,
so it equals ``sacrebleu.corpus_bleu`` on the same texts, smoothing included.

Outputs that must be one right text (a label word, a choice, a QA answer) are scored by exact match against
any accepted output after SQuAD's normalisation (case, punctuation, articles, spaces), and answers also by
SQuAD's token F1 (:func:`output_scores`).
"""

from __future__ import annotations

from functools import lru_cache

from warmstart.tasks.qa_decode import exact_match_score, f1_score

ROUGE = ("rouge1", "rouge2", "rougeL")
BLEU_STATS = (
    "sys_len",
    "ref_len",
    *(f"correct{n}" for n in range(1, 5)),
    *(f"total{n}" for n in range(1, 5)),
)


@lru_cache(maxsize=1)
def _rouge():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE), use_stemmer=True)


@lru_cache(maxsize=1)
def _bleu():
    from sacrebleu.metrics import BLEU

    return BLEU()


def text_stats(predictions: list[str], references: list[str]) -> dict:
    """(sum, count) stats of a batch: ROUGE F-measures x 100 and BLEU's sufficient statistics."""
    n = len(predictions)
    stats = {name: [0.0, n] for name in ROUGE}
    for pred, ref in zip(predictions, references):
        scores = _rouge().score(ref, pred)
        for name in ROUGE:
            stats[name][0] += 100 * scores[name].fmeasure
    rows = _bleu()._extract_corpus_statistics(predictions, [references])
    for i, key in enumerate(BLEU_STATS):
        stats[f"bleu_{key}_sum"] = [float(sum(r[i] for r in rows)), n]
    return {k: tuple(v) for k, v in stats.items()}


def with_bleu(totals: dict) -> dict:
    """Replaces BLEU's statistics (totals over the evaluation) by the corpus BLEU score."""
    from sacrebleu.metrics import BLEU

    out = {k: v for k, v in totals.items() if not k.startswith("bleu_")}
    if "bleu_sys_len_sum" in totals:
        get = [int(round(totals[f"bleu_{k}_sum"])) for k in BLEU_STATS]
        out["bleu"] = float(BLEU.compute_bleu(get[2:6], get[6:10], get[0], get[1], smooth_method="exp").score)
    return out


def output_scores(scoring: str, predictions: list[str], golds: list[list[str]]) -> dict:
    """(sum, count) stats: ``exact_match`` (0/1 per output) of every ``scoring`` but ``text``,
    and SQuAD's token ``f1`` (0..1) for ``answer``; {} for ``text`` (free text: ROUGE and BLEU instead)."""
    if scoring == "text":
        return {}
    n = len(predictions)
    out = {"exact_match": (sum(exact_match_score(p, g) for p, g in zip(predictions, golds)), n)}
    if scoring == "answer":
        out["f1"] = (sum(f1_score(p, g) for p, g in zip(predictions, golds)), n)
    return out
