"""Which positions the masked-LM objective predicts: single tokens, whole words, or spans of whole words.

- ``token``: each non-special token is selected with probability ``mask_prob`` (BERT, RoBERTa).
- ``whole_word``: each word is selected with probability ``mask_prob``, and with it all of its sub-word
  tokens (BERT's whole-word masking). One draw per word keeps the expected fraction of selected TOKENS at
  ``mask_prob``.
- ``span`` (SpanBERT): spans of whole words, lengths drawn from a geometric distribution (``span_p``)
  truncated at ``span_max`` words and renormalised (mean 3.8 words for 0.2 and 10, as in the paper), each
  starting at a random word, until ``mask_prob`` of the row's non-special tokens are covered.

A word is a token that starts one (:func:`word_starts`) plus the continuation tokens after it. Special
tokens are never selected and always end a word; the token after a special token, and the first token of a
row (packed windows cut words), always start one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import torch

from warmstart.errors import WarmstartError

if TYPE_CHECKING:
    from warmstart.objectives.mlm import MLMConfig

__all__ = [
    "MASKING",
    "check_config",
    "check_word_table",
    "expected_span_length",
    "sample_span_lengths",
    "select_positions",
    "span_length_pmf",
    "span_positions",
    "token_positions",
    "whole_word_positions",
    "word_ids",
    "word_starts",
]


# ---------------------------------------------------------------------------------------- word starts
def _wordpiece_rule(tokenizer):
    model = json.loads(tokenizer.backend.to_str()).get("model") or {}
    prefix = model.get("continuing_subword_prefix") or "##"
    return lambda token: not token.startswith(prefix)


def _marker_rule(*markers: str):
    def rule(tokenizer):
        vocab = tokenizer.get_vocab()
        for marker in markers:  # the first marker the vocabulary uses: Ġ (byte-level) or ▁ (metaspace)
            if any(token.startswith(marker) for token in vocab):
                return lambda token: token.startswith(marker)
        raise WarmstartError(
            f"cannot tell where words start in this {tokenizer.algorithm} vocabulary (no token starts with "
            f"{' or '.join(markers)})",
            "use mlm.masking=token with this tokenizer",
        )

    return rule


_WORD_RULES = {"wordpiece": _wordpiece_rule, "bpe": _marker_rule("Ġ", "▁"), "unigram": _marker_rule("▁")}


def word_starts(tokenizer) -> torch.Tensor:
    """A (vocab_size,) bool table: True for the tokens that begin a word.

    WordPiece: tokens without the continuation prefix (``##``). Byte-level BPE: tokens starting with ``Ġ``
    (the others continue the previous word). Unigram (metaspace): tokens starting with ``▁``. Special tokens
    are False; :func:`word_ids` treats them as word boundaries of their own."""
    make = _WORD_RULES.get(tokenizer.algorithm)
    if make is None:
        raise WarmstartError(
            "whole-word and span masking do not know where words start "
            f"for a '{tokenizer.algorithm}' tokenizer",
            f"use mlm.masking=token or a {' or '.join(_WORD_RULES)} tokenizer",
        )
    starts = make(tokenizer)
    table = torch.zeros(tokenizer.vocab_size, dtype=torch.bool)
    hits = [idx for token, idx in tokenizer.get_vocab().items() if idx < len(table) and starts(token)]
    table[hits] = True
    table[sorted(i for i in tokenizer.special_ids if i < len(table))] = False
    return table


def word_ids(ids: torch.Tensor, special: torch.Tensor, word_start: torch.Tensor) -> torch.Tensor:
    """The word index of every token of a (B, T) batch, counted over the whole batch in row-major order.

    A word starts at a token the ``word_start`` table marks, at a special token (``special``: a (B, T) bool
    mask), right after one, and at the start of every row."""
    start = word_start[ids] | special
    start[:, 1:] |= special[:, :-1]
    start[:, 0] = True
    return start.reshape(-1).cumsum(0).reshape(ids.shape) - 1


# ---------------------------------------------------------------------------------------- selection
def token_positions(
    ids: torch.Tensor, special_ids: torch.Tensor, mask_prob: float, generator: torch.Generator
) -> torch.Tensor:
    """Each non-special token independently with probability ``mask_prob`` (one uniform draw per token)."""
    candidates = ~torch.isin(ids, special_ids)
    draw = torch.rand(ids.shape, generator=generator)
    return (draw < mask_prob) & candidates


def whole_word_positions(
    ids: torch.Tensor,
    special_ids: torch.Tensor,
    word_start: torch.Tensor,
    mask_prob: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """Each word independently with probability ``mask_prob``, all of its tokens together."""
    special = torch.isin(ids, special_ids)
    wid = word_ids(ids, special, word_start)
    draw = torch.rand(int(wid[-1, -1]) + 1, generator=generator)
    return (draw[wid] < mask_prob) & ~special


def span_length_pmf(span_p: float, span_max: int) -> torch.Tensor:
    """P(length = k words) for k = 1..span_max: geometric(span_p) truncated at span_max, renormalised."""
    k = torch.arange(span_max, dtype=torch.float64)
    weights = span_p * (1.0 - span_p) ** k
    return weights / weights.sum()


def expected_span_length(span_p: float, span_max: int) -> float:
    pmf = span_length_pmf(span_p, span_max)
    return float((pmf * torch.arange(1, span_max + 1, dtype=torch.float64)).sum())


def sample_span_lengths(n: int, span_p: float, span_max: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` span lengths in words, drawn from :func:`span_length_pmf`."""
    if n == 0:
        return torch.zeros(0, dtype=torch.long)
    pmf = span_length_pmf(span_p, span_max).float()
    return torch.multinomial(pmf, n, replacement=True, generator=generator) + 1


def span_positions(
    ids: torch.Tensor,
    special_ids: torch.Tensor,
    word_start: torch.Tensor,
    mask_prob: float,
    span_p: float,
    span_max: int,
    generator: torch.Generator,
    return_lengths: bool = False,
):
    """SpanBERT span selection on a (B, T) CPU batch, vectorised over the whole batch.

    Each row's budget is ``mask_prob`` of its non-special tokens. Every non-special word is an anchor with
    its own span length; anchors are taken in a random order and each covers its word and the next ones, up
    to its length, never past a special token or the row's end (spans may overlap and join). Words are taken
    in the order their first covering anchor comes until the row's budget is reached; the word that crosses
    it is taken at random, in proportion to its part under the budget, so that the selected fraction is
    ``mask_prob`` on average (the last span can stop early, between words).

    With ``return_lengths`` also returns the drawn lengths (in words) of the spans that were used."""
    B, T = ids.shape
    special = torch.isin(ids, special_ids)
    wid = word_ids(ids, special, word_start).reshape(-1)
    n = int(wid[-1]) + 1
    size = torch.bincount(wid, minlength=n)  # tokens per word
    first = size.cumsum(0) - size  # flat position of each word's first token
    row = first // T
    is_special = special.reshape(-1)[first]  # a special token is a word of its own
    candidate = ~is_special
    segment = (is_special | (first % T == 0)).cumsum(0)  # spans stay inside one segment of one row
    budget = mask_prob * (~special).sum(1)
    crossing = torch.rand(B, generator=generator)  # decides the word that crosses each row's budget
    key = torch.rand(n, generator=generator)  # the order in which anchors are taken
    length = sample_span_lengths(n, span_p, span_max, generator)

    anchors = candidate.nonzero().squeeze(1)
    a_key, a_length, a_segment = key[anchors], length[anchors], segment[anchors]
    first_key = torch.full((n,), 2.0)  # the key of the first anchor covering each word (2: none)
    for j in range(int(a_length.max()) if len(anchors) else 0):
        target = (anchors + j).clamp_(max=n - 1)
        ok = (a_length > j) & (segment[target] == a_segment)  # past the end: the segment differs
        first_key.scatter_reduce_(0, target, torch.where(ok, a_key, 2.0), reduce="amin")

    # words row by row, each row in the order of their first covering anchor (ties: by position)
    order = torch.sort(row * 4.0 + first_key.double(), stable=True).indices  # float64: exact for any batch
    row_sorted = row[order]
    counted = torch.where(candidate, size, 0)[order]
    before = counted.cumsum(0) - counted
    words_per_row = torch.bincount(row, minlength=B)
    before -= before[words_per_row.cumsum(0) - words_per_row][row_sorted]  # tokens before it in its row
    # the words before the budget are taken, the one that crosses it with probability (part of it under the
    # budget) / (its size), the rest not: the coverage is the budget in expectation, whatever the word sizes
    take = candidate[order] & (before + crossing[row_sorted] * counted < budget[row_sorted])
    chosen = torch.zeros(n, dtype=torch.bool)
    chosen[order] = take
    selected = chosen[wid].reshape(B, T)
    if not return_lengths:
        return selected
    last = torch.full((B,), -1.0).scatter_reduce(0, row[chosen], first_key[chosen], reduce="amax")
    used = candidate & (key <= last[row])
    return selected, length[used]


# ---------------------------------------------------------------------------------------- dispatch
def _token(ids, cfg, special_ids, word_start, generator):
    return token_positions(ids, special_ids, cfg.mask_prob, generator)


def _whole_word(ids, cfg, special_ids, word_start, generator):
    return whole_word_positions(ids, special_ids, word_start, cfg.mask_prob, generator)


def _span(ids, cfg, special_ids, word_start, generator):
    return span_positions(ids, special_ids, word_start, cfg.mask_prob, cfg.span_p, cfg.span_max, generator)


_SELECT = {"token": _token, "whole_word": _whole_word, "span": _span}
_NEEDS_WORDS = ("whole_word", "span")
MASKING = tuple(_SELECT)


def check_config(cfg: MLMConfig) -> None:
    """Raise a WarmstartError for a masking setup that cannot work."""
    if cfg.masking not in _SELECT:
        raise WarmstartError(f"unknown mlm.masking '{cfg.masking}'", f"choose one of: {', '.join(MASKING)}")
    if not 0.0 <= cfg.mask_prob <= 1.0:
        raise WarmstartError(f"mlm.mask_prob {cfg.mask_prob} is not a fraction", "set it between 0 and 1")
    if not 0.0 < cfg.span_p <= 1.0:
        raise WarmstartError(f"mlm.span_p {cfg.span_p} is not a probability", "set it in (0, 1], e.g. 0.2")
    if cfg.span_max < 1:
        raise WarmstartError(f"mlm.span_max {cfg.span_max} is below 1", "set it to 1 or more, e.g. 10")


def check_word_table(cfg: MLMConfig, word_start: torch.Tensor | None) -> None:
    if cfg.masking in _NEEDS_WORDS and word_start is None:
        raise WarmstartError(
            f"mlm.masking={cfg.masking} needs to know where words start, but no word-start table was given",
            "pass word_start=word_starts(tokenizer) to the collator (MaskedLM.data does)",
        )


def select_positions(
    ids: torch.Tensor,
    cfg: MLMConfig,
    special_ids: torch.Tensor,
    generator: torch.Generator,
    word_start: torch.Tensor | None = None,
) -> torch.Tensor:
    """A bool mask of the positions to predict, by ``cfg.masking``; special ids are never selected.

    ``token`` works on any shape; ``whole_word`` and ``span`` read words along the last dimension."""
    check_word_table(cfg, word_start)
    shape = ids.shape
    if cfg.masking in _NEEDS_WORDS:
        if ids.numel() == 0:
            return torch.zeros(shape, dtype=torch.bool)
        ids = ids.reshape(-1, shape[-1])
    return _SELECT[cfg.masking](ids, cfg, special_ids, word_start, generator).reshape(shape)
