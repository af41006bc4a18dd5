"""Cloze probes: sentences of our own with one [MASK], in the kinds the lectures list (facts, syntax,
coreference, lexical semantics, sentiment, simple reasoning), scored for a masked-LM run and its random twin.

Each probe names the word a reader would put in the gap. A model's answer is its top token; the table also
gives the rank of the expected word among all tokens (1 = top; "-" when the tokenizer splits the word, so no
single token can be it). The random twin has the run's architecture, tokenizer and head shape, untrained.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from warmstart.inference.fill_mask import FillMask


@dataclass(frozen=True)
class Probe:
    category: str  # fact, syntax, coreference, ... (JSON's key: kind)
    text: str
    expected: str


PROBES = [
    Probe("fact", "Paris is the capital of [MASK].", "france"),
    Probe("fact", "The Nile is the longest [MASK] in Africa.", "river"),
    Probe("fact", "He was elected president of the United [MASK] in 1960.", "states"),
    Probe("syntax", "The keys to the old cabinet [MASK] on the table.", "are"),
    Probe("syntax", "They [MASK] to the station yesterday.", "went"),
    Probe("syntax", "She has [MASK] three novels since 2010.", "written"),
    Probe("coreference", "John lost his keys, so [MASK] had to call a locksmith.", "he"),
    Probe("coreference", "Mary told her brother that [MASK] would be home late.", "she"),
    Probe("lexical", "A puppy is a young [MASK].", "dog"),
    Probe("lexical", "The opposite of hot is [MASK].", "cold"),
    Probe("sentiment", "The film was dull and far too long; I [MASK] it.", "hated"),
    Probe("sentiment", "A wonderful, moving film: I [MASK] every minute of it.", "loved"),
    Probe("reasoning", "Two plus two equals [MASK].", "four"),
    Probe("reasoning", "If it rains, the streets get [MASK].", "wet"),
]


def rank_of(probs: torch.Tensor, token_id: int | None) -> int | None:
    """1-based rank of ``token_id`` in one mask's distribution (None when there is no such token)."""
    if token_id is None:
        return None
    return int((probs > probs[token_id]).sum()) + 1


def score(model: FillMask, probes: list[Probe]) -> list[dict]:
    """Per probe: the top 3 tokens with probabilities and the rank of the expected word."""
    rows = []
    for p in probes:
        text = p.text.replace("[MASK]", model.mask_token)
        _, probs = model.probabilities(text)
        top = probs[0].topk(3)
        pieces = model.tokenizer.encode(p.expected)
        expected = pieces[0] if len(pieces) == 1 else None
        rows.append(
            {
                "top": [
                    (model.tokenizer.id_to_token(int(i)), round(float(s), 4))
                    for s, i in zip(top.values, top.indices)
                ],
                "rank": rank_of(probs[0], expected),
            }
        )
    return rows


def probe_table(run: str, probes: list[Probe] = PROBES) -> dict:
    """{"probes": [...], "pretrained": [...], "twin": [...]}, plus how many each model got right (top 1)."""
    pretrained, twin = score(FillMask(run), probes), score(FillMask(run, random_init=True), probes)
    hits = {
        name: sum(r["rank"] == 1 for r in rows) for name, rows in (("pretrained", pretrained), ("twin", twin))
    }
    return {
        "probes": [{"kind": p.category, "text": p.text, "expected": p.expected} for p in probes],
        "pretrained": pretrained,
        "twin": twin,
        "top1": hits,
        "top10": {
            name: sum(r["rank"] is not None and r["rank"] <= 10 for r in rows)
            for name, rows in (("pretrained", pretrained), ("twin", twin))
        },
    }
