"""Trivial and heuristic baselines for wiki-ner-silver (entity F1) and wiki-qa (SQuAD EM/F1), test split.

A finetuned model has to beat these to have learned anything:
- tagging, "memorised tags": each word gets the tag it had most often in the training split (O if unseen),
  then I- tags that cannot continue an entity are read as seqeval reads them. "all O" scores F1 = 0.
- QA, "first words": the first 3 words of the context (about the mean answer length); "is a" heuristic:
  the words after the first " is a(n) / was a(n) / is the / are " up to the next comma or period.

    .venv/bin/python examples/task_baselines.py
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from warmstart.data.catalog import open_dataset
from warmstart.tasks.qa_decode import exact_match_score, f1_score
from warmstart.tasks.tagging import entity_counts

COPULA = re.compile(r"\b(?:is|was|are|were)\s+(?:a|an|the)?\s*([^,.;(]+)", re.IGNORECASE)


def tagging_baseline() -> dict:
    data = open_dataset("wiki-ner-silver")
    counts: dict[str, Counter] = defaultdict(Counter)
    for r in data.records("train"):
        for w, t in zip(r["tokens"], r["tags"]):
            counts[w][t] += 1
    tp = n_pred = n_gold = 0
    for r in data.records("test"):
        pred = [counts[w].most_common(1)[0][0] if w in counts else "O" for w in r["tokens"]]
        a, b, c = entity_counts(r["tags"], pred)
        tp, n_pred, n_gold = tp + a, n_pred + b, n_gold + c
    p, rec = tp / max(n_pred, 1), tp / max(n_gold, 1)
    return {"precision": p, "recall": rec, "f1": 2 * p * rec / (p + rec) if p + rec else 0.0}


def qa_baselines() -> dict:
    rows = list(open_dataset("wiki-qa").records("test"))
    golds = [[a["text"] for a in r["answers"]] for r in rows]
    first = [" ".join(r["context"].split()[:3]) for r in rows]
    copula = []
    for r in rows:
        m = COPULA.search(r["context"])
        copula.append(m.group(1).strip() if m else "")
    out = {}
    for name, preds in (("first 3 words", first), ("'is a' heuristic", copula)):
        out[name] = {
            "exact_match": 100 * sum(exact_match_score(p, g) for p, g in zip(preds, golds)) / len(rows),
            "f1": 100 * sum(f1_score(p, g) for p, g in zip(preds, golds)) / len(rows),
        }
    return out


if __name__ == "__main__":
    t = tagging_baseline()
    shown = f"P {t['precision']:.4f} R {t['recall']:.4f} F1 {t['f1']:.4f}"
    print(f"wiki-ner-silver test, memorised tags: {shown}")
    for name, m in qa_baselines().items():
        print(f"wiki-qa test, {name}: EM {m['exact_match']:.2f} F1 {m['f1']:.2f}")
