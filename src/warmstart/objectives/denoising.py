"""BART denoising: corrupt a document with one or more noising transforms; the decoder rebuilds the original.

Transforms (each on one 1-D token tensor without <s>/</s>; special tokens are never masked or deleted):

- ``token_masking``: ``mask_prob`` of the tokens become <mask> (``random_token_frac`` of them a random token);
- ``token_deletion``: ``mask_prob`` of the tokens are deleted, so the model must find where;
- ``text_infilling``: spans with Poisson(``poisson_lambda``) lengths cover ``mask_prob`` of the tokens, each
  span becomes ONE <mask>; a zero-length span inserts a <mask> (the model learns how many tokens are missing);
- ``sentence_permutation``: the sentences (split after . ! ? and document ends) are shuffled;
- ``document_rotation``: the document is rotated to start at a random token.

Combined, they run in the order permutation, rotation, then masking / deletion / infilling. BART's best mix
is text infilling + sentence permutation (mask 0.3, lambda 3). The batch is ``<s> corrupted </s>`` in,
``<s> original </s>`` out; BART's decoder starts with </s>.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from warmstart.config import opt
from warmstart.data.packing import PackedWindows
from warmstart.errors import WarmstartError
from warmstart.objectives.lm_loss import Seq2SeqLM
from warmstart.objectives.span_corruption import seq2seq_batch

ORDER = ("sentence_permutation", "document_rotation", "token_masking", "token_deletion", "text_infilling")


@dataclass
class DenoisingConfig:
    transforms: list[str] = opt(
        ["text_infilling", "sentence_permutation"], f"noising transforms, any of: {', '.join(ORDER)}"
    )
    mask_prob: float = opt(0.3, "fraction of the tokens masked, deleted or infilled (BART 0.3)")
    poisson_lambda: float = opt(3.0, "text_infilling: mean span length, Poisson distributed (BART 3)")
    random_token_frac: float = opt(0.1, "token_masking: fraction of masked tokens set to a random token")

    def __post_init__(self):
        unknown = [t for t in self.transforms if t not in ORDER]
        if unknown or not self.transforms:
            raise WarmstartError(
                f"unknown denoising transform(s) {unknown}" if unknown else "no denoising transform given",
                f"choose among: {', '.join(ORDER)}",
            )
        for name, low in (("mask_prob", 0), ("random_token_frac", 0)):
            if not low <= getattr(self, name) <= 1:
                raise WarmstartError(f"denoising.{name} {getattr(self, name)} is out of range", "use 0 to 1")
        if self.poisson_lambda <= 0:
            raise WarmstartError(f"denoising.poisson_lambda {self.poisson_lambda} must be positive", "use 3")


def _eligible(ids: torch.Tensor, special) -> torch.Tensor:
    return torch.ones_like(ids, dtype=torch.bool) if special is None else ~torch.isin(ids, special)


def _pick(ids, p: float, gen, special) -> torch.Tensor:
    """round(p * n) positions drawn uniformly among the n non-special ones."""
    pos = _eligible(ids, special).nonzero().squeeze(1)
    return pos[torch.randperm(len(pos), generator=gen)[: round(p * len(pos))]]


def token_masking(ids, p, mask_id, gen, *, special=None, random_frac=0.0, vocab_size=None) -> torch.Tensor:
    """``p`` of the non-special tokens replaced by ``mask_id``; ``random_frac`` of those (drawn per token) by
    a random non-special id below ``vocab_size`` instead. Same length as ``ids``."""
    picked, out = _pick(ids, p, gen, special), ids.clone()
    out[picked] = mask_id
    if random_frac > 0 and vocab_size is not None:
        pool = _eligible(torch.arange(vocab_size), special).nonzero().squeeze(1)
        rand = picked[torch.rand(len(picked), generator=gen) < random_frac]
        out[rand] = pool[torch.randint(len(pool), (len(rand),), generator=gen)]
    return out


def token_deletion(ids, p, gen, *, special=None) -> torch.Tensor:
    """``ids`` without ``p`` of its non-special tokens; the rest keep their order."""
    keep = torch.ones_like(ids, dtype=torch.bool)
    keep[_pick(ids, p, gen, special)] = False
    return ids[keep]


def infilling_spans(ids, p, lam, gen, *, special=None) -> list[tuple[int, int]]:
    """(start, length) of the infilling spans, sorted. Lengths ~ Poisson(``lam``) are drawn until they sum
    to round(p * non-special tokens) (the last one trimmed), then placed longest first at uniformly random
    free places: only non-special tokens, never touching another span. A span with no room left is dropped.
    Length 0 means: insert a <mask> before ``start`` (``start`` may be ``len(ids)``)."""
    free = _eligible(ids, special).numpy()
    n, budget = len(ids), round(p * int(free.sum()))
    if budget == 0:
        return []
    lengths, total = [], 0
    while total < budget:
        draw = torch.poisson(torch.full((budget,), float(lam)), generator=gen).long()
        lengths.append(draw)
        total += int(draw.sum())
    lengths = torch.cat(lengths)
    last = int((lengths.cumsum(0) >= budget).nonzero()[0])
    lengths = lengths[: last + 1]
    lengths[last] -= int(lengths.sum()) - budget
    lengths = sorted(lengths.tolist(), reverse=True)
    picks = torch.rand(len(lengths), generator=gen).numpy()
    taken, used_gap, spans = np.zeros(n + 2, dtype=bool), np.zeros(n + 1, dtype=bool), []  # taken: 1 pad/side
    for length, u in zip(lengths, picks):
        if length > 0:  # start s: s..s+L-1 free and untaken, neighbours s-1 and s+L untaken
            ok = np.concatenate([[0], np.cumsum(free & ~taken[1:-1])])
            valid = (ok[length:] - ok[:-length] == length) & ~taken[: n - length + 1] & ~taken[length + 1 :]
        else:  # gap g (before token g): neither neighbour taken, not used by another insertion
            valid = ~taken[:-1] & ~taken[1:] & ~used_gap
        where = valid.nonzero()[0]
        if len(where) == 0:
            continue
        s = int(where[min(int(u * len(where)), len(where) - 1)])
        if length > 0:
            taken[s + 1 : s + 1 + length] = True
        else:
            used_gap[s] = True
        spans.append((s, length))
    return sorted(spans)


def apply_spans(ids, spans, mask_id) -> torch.Tensor:
    """Each (start, length) span of ``ids`` replaced by one ``mask_id`` (length 0: a ``mask_id`` inserted)."""
    mask, pieces, pos = torch.tensor([mask_id], dtype=ids.dtype), [], 0
    for start, length in spans:
        pieces += [ids[pos:start], mask]
        pos = start + length
    return torch.cat(pieces + [ids[pos:]])


def text_infilling(ids, p, lam, mask_id, gen, *, special=None) -> torch.Tensor:
    """BART text infilling: :func:`infilling_spans`, each span replaced by one ``mask_id``."""
    return apply_spans(ids, infilling_spans(ids, p, lam, gen, special=special), mask_id)


def sentence_permutation(ids, sentence_end, gen) -> torch.Tensor:
    """The sentences of ``ids`` (each ends after a token with ``sentence_end[token]``; the last may end
    without one) in a random order; their contents are unchanged."""
    cuts = (sentence_end[ids].nonzero().squeeze(1) + 1).tolist()
    sentences = [s for s in torch.tensor_split(ids, cuts) if len(s)]
    return torch.cat([sentences[i] for i in torch.randperm(len(sentences), generator=gen)] or [ids[:0]])


def document_rotation(ids, gen) -> torch.Tensor:
    """``ids`` rotated to start at a random token other than the first (a cyclic shift)."""
    if len(ids) < 2:
        return ids.clone()
    k = int(torch.randint(1, len(ids), (1,), generator=gen))
    return torch.cat([ids[k:], ids[:k]])


def sentence_ends(tokenizer) -> torch.Tensor:
    """(vocab,) bool: tokens whose text ends with '.', '!' or '?', and the document separator."""
    texts = tokenizer.decode_batch([[i] for i in range(tokenizer.vocab_size)], skip_special_tokens=False)
    table = torch.tensor([t.rstrip().endswith((".", "!", "?")) for t in texts], dtype=torch.bool)
    table[sorted(tokenizer.special_ids)] = False
    table[tokenizer.doc_sep_id] = True
    return table


class DenoisingCollator:
    """Packed windows (B, W) -> denoising batch: ``<s> corrupted </s>`` (padded to the longest row, the
    content cut to W tokens should insertions outgrow it) and ``<s> original </s>`` as labels."""

    def __init__(self, cfg: DenoisingConfig, tokenizer):
        ids = {r: getattr(tokenizer, f"{r}_id") for r in ("bos", "eos", "mask", "pad")}
        missing = "/".join(r for r, i in ids.items() if i is None)
        if missing:
            raise WarmstartError(
                f"denoising needs <s>, </s>, <mask> and <pad>; the tokenizer has no {missing} token",
                "use a bpe tokenizer (`warmstart tokenizer train --kind bpe`), as BART does",
            )
        self.cfg, self.vocab_size = cfg, tokenizer.vocab_size
        self.bos, self.eos, self.mask, self.pad = ids["bos"], ids["eos"], ids["mask"], ids["pad"]
        self.special = torch.tensor(sorted(tokenizer.special_ids), dtype=torch.long)
        needs_ends = "sentence_permutation" in cfg.transforms
        self.sentence_end = sentence_ends(tokenizer) if needs_ends else None

    def corrupt(self, ids: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """The configured transforms applied to one row (no <s>/</s>), in :data:`ORDER`."""
        for name in (t for t in ORDER if t in self.cfg.transforms):
            ids = self._transforms[name](ids, gen)
        return ids

    @property
    def _transforms(self) -> dict:
        c, special = self.cfg, self.special
        return {
            "sentence_permutation": lambda ids, g: sentence_permutation(ids, self.sentence_end, g),
            "document_rotation": document_rotation,
            "token_masking": lambda ids, g: token_masking(
                ids,
                c.mask_prob,
                self.mask,
                g,
                special=special,
                random_frac=c.random_token_frac,
                vocab_size=self.vocab_size,
            ),
            "token_deletion": lambda ids, g: token_deletion(ids, c.mask_prob, g, special=special),
            "text_infilling": lambda ids, g: text_infilling(
                ids, c.mask_prob, c.poisson_lambda, self.mask, g, special=special
            ),
        }

    def pair(self, row: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(``<s> corrupted </s>``, ``<s> row </s>``) of one window (no <s>/</s> of its own)."""
        bos, eos = torch.tensor([self.bos]), torch.tensor([self.eos])
        return torch.cat([bos, self.corrupt(row, generator)[: len(row)], eos]), torch.cat([bos, row, eos])

    def __call__(self, ids: torch.Tensor, generator: torch.Generator) -> dict:
        sources, targets = zip(*(self.pair(row, generator) for row in ids))
        return seq2seq_batch(list(sources), list(targets), self.pad, self.eos)


class Denoising(Seq2SeqLM):
    """BART's pretraining unit: windows of seq_len - 2 tokens, so <s> corrupted </s> fits ``seq_len``."""

    sections = {"denoising": DenoisingConfig}
    families = ("bart",)
    hf_architecture = "BartForConditionalGeneration"

    @staticmethod
    def check_tokenizer(tokenizer) -> None:
        DenoisingCollator(DenoisingConfig(transforms=["token_deletion"]), tokenizer)  # its checks

    @staticmethod
    def decoder_start_id(tokenizer) -> int:
        return tokenizer.eos_id

    @staticmethod
    def data(shards, seq_len: int, tokenizer, cfg: DenoisingConfig):

        return PackedWindows(shards, seq_len - 2, [], []), DenoisingCollator(cfg, tokenizer)

    @staticmethod
    def text_pairs(seq_len: int, tokenizer, cfg: DenoisingConfig):
        return seq_len - 2, DenoisingCollator(cfg, tokenizer).pair
