"""T5 span corruption: drop random spans from the input, each for one sentinel; the target spells them out.

Of a raw window of ``raw_len`` tokens, ``noise_density`` (0.15) is noise, cut into spans of mean length
``mean_span_length`` (3). Every noise span becomes ONE sentinel (``<extra_id_0>``, ``<extra_id_1>``, ...) in
the input; the target is each sentinel followed by the span it replaced, then a final sentinel, then </s>:

    Thank you for inviting me to your party last week .
    input:  Thank you <X> me to your party <Y> week . </s>
    target: <X> for inviting <Y> last <Z> </s>

:func:`raw_length` picks the raw window length whose corrupted input fits ``seq_len`` exactly, as T5's
``compute_input_and_target_lengths`` does. :func:`seq2seq_batch` builds the encoder-decoder batch format
that both this objective and BART denoising (:mod:`warmstart.objectives.denoising`) produce.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from warmstart.config import opt
from warmstart.data.packing import PackedWindows
from warmstart.errors import WarmstartError
from warmstart.objectives.lm_loss import IGNORE, Seq2SeqLM


@dataclass
class SpanCorruptionConfig:
    noise_density: float = opt(0.15, "fraction of the raw tokens that are dropped into the target (T5 0.15)")
    mean_span_length: float = opt(3.0, "mean length of a dropped span in tokens (T5 3)")

    def __post_init__(self):
        if not 0 < self.noise_density < 1:
            raise WarmstartError(
                f"span_corruption.noise_density {self.noise_density} is out of range", "use a value in (0, 1)"
            )
        if self.mean_span_length < 1:
            raise WarmstartError(
                f"span_corruption.mean_span_length {self.mean_span_length} is below 1", "use 1 or more"
            )


def _noise_counts(length: int, noise_density: float, mean_span_length: float) -> tuple[int, int]:
    """(noise tokens, noise spans) for ``length`` >= 2 raw tokens; deterministic, as in T5."""
    noise = min(max(round(length * noise_density), 1), length - 1)
    spans = max(1, round(noise / mean_span_length))
    return noise, min(spans, length - noise)  # every noise span needs a non-noise span before it


def _random_segmentation(items: int, segments: int, generator: torch.Generator) -> torch.Tensor:
    """Lengths of a uniformly random split of ``items`` into ``segments`` non-empty parts."""
    starts = (torch.arange(items - 1) < segments - 1)[torch.randperm(items - 1, generator=generator)]
    segment_id = torch.cat([torch.zeros(1, dtype=torch.long), starts.long().cumsum(0)])
    return torch.bincount(segment_id, minlength=segments)


def random_spans_noise_mask(
    length: int, noise_density: float, mean_span_length: float, generator: torch.Generator
) -> torch.Tensor:
    """A (length,) bool mask: T5's noise spans. Spans alternate non-noise, noise, non-noise, ... (starting
    with non-noise); the token and span counts are fixed by the length, and all such masks are equally
    likely."""
    full = max(length, 2)  # as T5: avoid degenerate counts, then cut back
    noise, spans = _noise_counts(full, noise_density, mean_span_length)
    noise_lengths = _random_segmentation(noise, spans, generator)
    keep_lengths = _random_segmentation(full - noise, spans, generator)
    interleaved = torch.stack([keep_lengths, noise_lengths], dim=1).reshape(-1)
    is_noise = torch.arange(2 * spans) % 2 == 1
    return is_noise.repeat_interleave(interleaved)[:length]


def span_corrupt(
    ids: torch.Tensor, noise_mask: torch.Tensor, sentinel_ids, eos_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) as 1-D tensors: noise span k becomes ``sentinel_ids[k]`` in the inputs; the targets
    list each sentinel followed by its span, then one more sentinel; both end with ``eos_id``."""
    ids, noise = torch.as_tensor(ids), torch.as_tensor(noise_mask, dtype=torch.bool)
    starts = noise & ~torch.cat([torch.zeros(1, dtype=torch.bool), noise[:-1]])
    n_spans = int(starts.sum())
    if n_spans + 1 > len(sentinel_ids):
        raise WarmstartError(
            f"{n_spans} noise spans need {n_spans + 1} sentinels but the tokenizer has {len(sentinel_ids)}",
            "add more sentinels (--sentinels N), or use a shorter data.seq_len or a longer mean span",
        )
    sentinels = torch.as_tensor(list(sentinel_ids[: n_spans + 1]), dtype=ids.dtype)
    span_index = starts.long().cumsum(0) - 1  # which span each noise token belongs to
    eos = torch.tensor([eos_id], dtype=ids.dtype)
    inputs = torch.where(starts, sentinels[span_index.clamp(min=0)], ids)[~noise | starts]
    # targets: the noise tokens, with the sentinel of their span in front of each span start
    target_starts = starts[noise]
    pieces = torch.stack([sentinels[span_index[noise]], ids[noise]], dim=1)
    keep = torch.stack([target_starts, torch.ones_like(target_starts)], dim=1)
    targets = torch.cat([pieces[keep], sentinels[n_spans:], eos])
    return torch.cat([inputs, eos]), targets


def raw_length(seq_len: int, noise_density: float, mean_span_length: float) -> tuple[int, int]:
    """(raw_len, target_len): the most raw tokens whose corrupted input (sentinels and </s> included) is at
    most ``seq_len`` long, and the length of their target (spans, a sentinel each, a final one, </s>)."""

    def lengths(n: int) -> tuple[int, int]:
        noise, spans = _noise_counts(n, noise_density, mean_span_length)
        return n - noise + spans + 1, noise + spans + 2

    if lengths(2)[0] > seq_len:
        raise WarmstartError(f"sequence length {seq_len} is too short for span corruption", "use 8 or more")
    n = 2
    while lengths(n + 1)[0] <= seq_len:
        n += 1
    return n, lengths(n)[1]


def seq2seq_batch(sources, targets, pad_id: int, decoder_start_id: int) -> dict:
    """The encoder-decoder batch of 1-D ``sources`` and ``targets``: ``input_ids``/``attention_mask`` padded
    with ``pad_id``; ``labels`` padded with IGNORE; ``decoder_input_ids`` = labels shifted right behind
    ``decoder_start_id`` (``pad_id`` where padded); ``decoder_attention_mask``."""

    def pad(rows, value):
        out = torch.full((len(rows), max(len(r) for r in rows)), value, dtype=torch.long)
        for i, r in enumerate(rows):
            out[i, : len(r)] = torch.as_tensor(r, dtype=torch.long)
        return out

    input_ids = pad(sources, pad_id)
    attention_mask = pad([torch.ones(len(s)) for s in sources], 0)
    labels = pad(targets, IGNORE)
    decoder_input_ids = torch.cat(
        [torch.full((len(targets), 1), decoder_start_id, dtype=torch.long), labels[:, :-1]], dim=1
    )
    decoder_attention_mask = pad([torch.ones(len(t)) for t in targets], 0)
    decoder_input_ids[decoder_attention_mask == 0] = pad_id
    return {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "decoder_input_ids": decoder_input_ids,
        "labels": labels,
        "decoder_attention_mask": decoder_attention_mask,
    }


def sentinel_ids(tokenizer) -> list[int]:
    """Ids of ``<extra_id_0>``, ``<extra_id_1>``, ... as far as the tokenizer has them (T5's sentinels)."""
    ids = []
    while (i := tokenizer.token_to_id(f"<extra_id_{len(ids)}>")) is not None:
        ids.append(i)
    if not ids:
        raise WarmstartError(
            "the tokenizer has no sentinel tokens (<extra_id_0>, <extra_id_1>, ...) for span corruption",
            "train a tokenizer with --sentinels 100 (or add them with tokenization.sentinels.add_sentinels)",
        )
    return ids


class SpanCorruptionCollator:
    """Raw windows (B, raw_len) -> span-corrupted encoder-decoder batch; masks from the batch's generator.

    Every row of one length gets the same token and span counts, so inputs and targets come out unpadded
    when the windows come from :func:`raw_length`. T5's decoder starts with the pad token."""

    def __init__(
        self, cfg: SpanCorruptionConfig, sentinel_ids, eos_id: int, pad_id: int, decoder_start_id: int
    ):
        self.cfg, self.sentinels = cfg, list(sentinel_ids)
        self.eos_id, self.pad_id, self.decoder_start_id = eos_id, pad_id, decoder_start_id

    @classmethod
    def for_tokenizer(cls, cfg: SpanCorruptionConfig, tokenizer) -> SpanCorruptionCollator:
        """The collator for ``tokenizer``'s sentinel, </s> and pad ids (decoder start = pad, as T5)."""
        return cls(cfg, sentinel_ids(tokenizer), tokenizer.eos_id, tokenizer.pad_id, tokenizer.pad_id)

    def pair(self, row: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(input, target) of one raw window: a noise mask drawn from ``generator``, then span_corrupt."""
        mask = random_spans_noise_mask(len(row), self.cfg.noise_density, self.cfg.mean_span_length, generator)
        return span_corrupt(row, mask, self.sentinels, self.eos_id)

    def __call__(self, ids: torch.Tensor, generator: torch.Generator) -> dict:
        sources, targets = zip(*(self.pair(row, generator) for row in ids))
        return seq2seq_batch(list(sources), list(targets), self.pad_id, self.decoder_start_id)


class SpanCorruption(Seq2SeqLM):
    """T5's pretraining unit: raw windows sized by :func:`raw_length` so corrupted inputs fill ``seq_len``."""

    sections = {"span_corruption": SpanCorruptionConfig}
    families = ("t5",)
    hf_architecture = "T5ForConditionalGeneration"

    @staticmethod
    def check_tokenizer(tokenizer) -> None:
        sentinel_ids(tokenizer)
        if tokenizer.eos_id is None or tokenizer.pad_id is None:
            raise WarmstartError(
                "span corruption needs </s> and <pad> tokens", "train a unigram tokenizer with warmstart"
            )

    @staticmethod
    def decoder_start_id(tokenizer) -> int:
        return tokenizer.pad_id

    @staticmethod
    def data(shards, seq_len: int, tokenizer, cfg: SpanCorruptionConfig):

        raw_len, _ = raw_length(seq_len, cfg.noise_density, cfg.mean_span_length)
        return PackedWindows(shards, raw_len, [], []), SpanCorruptionCollator.for_tokenizer(cfg, tokenizer)

    @staticmethod
    def text_pairs(seq_len: int, tokenizer, cfg: SpanCorruptionConfig):
        raw_len, _ = raw_length(seq_len, cfg.noise_density, cfg.mean_span_length)
        return raw_len, SpanCorruptionCollator.for_tokenizer(cfg, tokenizer).pair
