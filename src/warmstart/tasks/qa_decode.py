"""Extractive QA: from start/end logits of a batch of windows to answers, and SQuAD's metrics.

Decoding follows BERT / Hugging Face's ``run_qa`` post-processing: per window, the ``n_best`` highest start
and end logits among the context tokens; a span (s, e) is valid when e >= s and it is at most
``max_answer_length`` tokens long; its score is start_logit[s] + end_logit[e]; an example's answer is its
best span over all its windows. With unanswerable questions allowed (SQuAD v2), the null score is
start_logit[0] + end_logit[0] (the first token, [CLS]), the minimum over the example's windows, and the
answer is "" when it beats the best span.

Exact match and F1 are those of the official SQuAD evaluation scripts (v1.1, and v2.0 for empty answers):
answers are normalised (lowercase, no punctuation, no articles a/an/the, single spaces); F1 is over the bag
of normalised tokens; an example scores the maximum over its gold answers; an unanswerable gold scores 1 only
for an empty prediction.
"""

from __future__ import annotations

import re
import string
from collections import Counter

import torch

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lowercase, drop punctuation, drop articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _f1(prediction: str, gold: str) -> float:
    pred_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:  # v2.0: no-answer (or all-stopword) answers match only exactly
        return float(pred_tokens == gold_tokens)
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match_score(prediction: str, golds: list[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer; ``golds == []``: unanswerable."""
    golds = golds or [""]
    return float(max(normalize_answer(prediction) == normalize_answer(g) for g in golds))


def f1_score(prediction: str, golds: list[str]) -> float:
    """Token-overlap F1 against the best-matching gold answer; ``golds == []``: unanswerable."""
    return max(_f1(prediction, g) for g in golds or [""])


def best_spans(
    start: torch.Tensor, end: torch.Tensor, context: torch.Tensor, n_best: int, max_answer_length: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per window (row): the score, start and end token of its best valid span (score -inf: none).

    ``start``, ``end``: (W, T) logits; ``context``: (W, T) bool, True on context tokens.
    """
    k = max(1, min(n_best, start.shape[1]))
    start = start.float().masked_fill(~context, float("-inf"))
    end = end.float().masked_fill(~context, float("-inf"))
    start_val, start_idx = start.topk(k, dim=1)
    end_val, end_idx = end.topk(k, dim=1)
    score = start_val[:, :, None] + end_val[:, None, :]  # (W, k starts, k ends)
    length = end_idx[:, None, :] - start_idx[:, :, None] + 1
    valid = (length >= 1) & (length <= max_answer_length) & torch.isfinite(score)
    best, flat = score.masked_fill(~valid, float("-inf")).flatten(1).max(dim=1)
    rows = torch.arange(start.shape[0])
    return best, start_idx[rows, flat // k], end_idx[rows, flat % k]


def decode(
    start: torch.Tensor,
    end: torch.Tensor,
    batch: dict,
    n_best: int,
    max_answer_length: int,
) -> list[dict]:
    """One prediction per example of ``batch`` (in order of first window): id, answer, start, end, score.

    ``start``/``end`` are the (W, T) logits of the batch's windows. The batch carries ``context_mask``,
    ``example_index`` (example of each window), ``offsets`` (per window, per token: (start, end) characters in
    the context, None off the context), ``examples`` (index -> {"id", "context", "answers"}) and
    ``allow_null``. ``start``/``end`` of the answer are character offsets in the context; a null answer
    (SQuAD v2) has answer "", start = end = -1 and the null score.
    """
    start, end = start.detach().float().cpu(), end.detach().float().cpu()
    context = batch["context_mask"].cpu().bool()
    scores, starts, ends = best_spans(start, end, context, n_best, max_answer_length)
    null = start[:, 0] + end[:, 0]
    windows: dict[int, list[int]] = {}
    for w, example in enumerate(batch["example_index"]):
        windows.setdefault(example, []).append(w)
    out = []
    for example, rows in windows.items():
        info = batch["examples"][example]
        w = max(rows, key=lambda r: float(scores[r]))  # the first window wins ties
        span_score, null_score = float(scores[w]), min(float(null[r]) for r in rows)
        prediction = {"id": info["id"], "answer": "", "start": -1, "end": -1, "score": null_score}
        if span_score > float("-inf") and not (batch["allow_null"] and null_score > span_score):
            first, last = batch["offsets"][w][int(starts[w])], batch["offsets"][w][int(ends[w])]
            char_start, char_end = first[0], last[1]
            answer = info["context"][char_start:char_end]
            prediction.update(answer=answer, start=char_start, end=char_end, score=span_score)
        out.append(prediction)
    return out
