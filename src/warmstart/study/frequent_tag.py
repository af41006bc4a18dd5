"""The classic tagging baseline: each word gets the tag it had most often in training.

A word form seen in training takes its most frequent tag there (ties: the tag first reached that count); an
unseen form takes the most frequent tag of its lower-cased form, and a word unseen in both forms the most
frequent tag of the whole training split. Nothing is tuned, so validation is only reported. Scored as the
tagging task scores: word accuracy, and for BIO tags entity precision, recall and F1 (seqeval's reading).
"""

from __future__ import annotations

from collections import Counter

from warmstart.tasks.tagging import entity_counts, is_bio


def _most_frequent(counts: dict[str, Counter]) -> dict[str, str]:
    return {word: c.most_common(1)[0][0] for word, c in counts.items()}


def fit(train: list[dict]) -> tuple[dict[str, str], dict[str, str], str]:
    exact: dict[str, Counter] = {}
    lower: dict[str, Counter] = {}
    overall: Counter = Counter()
    for r in train:
        for word, tag in zip(r["tokens"], r["tags"]):
            exact.setdefault(word, Counter())[tag] += 1
            lower.setdefault(word.lower(), Counter())[tag] += 1
            overall[tag] += 1
    return _most_frequent(exact), _most_frequent(lower), overall.most_common(1)[0][0]


def score(rows: list[dict], model, bio: bool) -> dict:
    exact, lower, default = model
    right = words = tp = n_pred = n_gold = 0
    for r in rows:
        pred = [exact.get(w) or lower.get(w.lower(), default) for w in r["tokens"]]
        right += sum(p == g for p, g in zip(pred, r["tags"]))
        words += len(pred)
        if bio:
            a, b, c = entity_counts(r["tags"], pred)
            tp, n_pred, n_gold = tp + a, n_pred + b, n_gold + c
    out = {"accuracy": right / max(words, 1)}
    if bio:
        p, rec = tp / n_pred if n_pred else 0.0, tp / n_gold if n_gold else 0.0
        out.update(precision=p, recall=rec, f1=2 * p * rec / (p + rec) if p + rec else 0.0)
    return out


def frequent_tag_baseline(records: dict[str, list[dict]]) -> dict:
    """Fit on records["train"], score validation and test: {"validation", "test"}."""
    bio = is_bio({t for r in records["train"] for t in r["tags"]})
    model = fit(records["train"])
    return {s: score(records[s], model, bio) for s in ("validation", "test")}
