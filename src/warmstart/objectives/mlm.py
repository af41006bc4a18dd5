"""Masked language modelling (BERT), with dynamic masks drawn per batch (RoBERTa).

Corruption: ``mask_prob`` of the non-special tokens are selected, one by one, by whole words or by spans of
words (``masking``, see :mod:`warmstart.objectives.masking`); of those ``mask_token_frac`` become [MASK],
``random_token_frac`` a random non-special token, the rest stay unchanged (drawn per token in every mode).
The loss is cross-entropy on the selected positions only, and the vocabulary projection is computed only
for them (a sparse head). ``mlm.emd`` puts DeBERTa's enhanced mask decoder before the head
(objectives/emd.py); ``sift.weight`` adds SiFT's penalty on its distributions (objectives/sift.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.config import opt
from warmstart.data.packing import PackedWindows
from warmstart.errors import WarmstartError
from warmstart.nn.mlp import activation
from warmstart.objectives.base import Objective
from warmstart.objectives.emd import check_emd, emd_states
from warmstart.objectives.fused_ce import linear_cross_entropy
from warmstart.objectives.masking import check_config, check_word_table, select_positions, word_starts
from warmstart.objectives.sift import sift_on, sift_penalty

IGNORE = -100


@dataclass
class MLMConfig:
    mask_prob: float = opt(
        0.15, "fraction of non-special tokens selected for prediction (BERT 0.15, ModernBERT 0.3)"
    )
    mask_token_frac: float = opt(0.8, "of the selected tokens, the fraction replaced by [MASK]")
    random_token_frac: float = opt(0.1, "of the selected tokens, the fraction replaced by a random token")
    masking: str = opt(
        "token",
        "what is selected: token (each token alone), whole_word (all sub-words of a word together, BERT "
        "whole-word masking) or span (SpanBERT: spans of whole words until mask_prob of the tokens)",
    )
    span_p: float = opt(0.2, "masking=span: p of the geometric distribution of span lengths in words")
    span_max: int = opt(10, "masking=span: the longest span in words (the geometric is truncated here)")
    emd: bool = opt(
        False,
        "DeBERTa's enhanced mask decoder: the absolute position embeddings added to the states entering "
        "the last block, which runs emd_passes more times before the MLM head (pretraining only)",
    )
    emd_passes: int = opt(2, "mlm.emd: passes of the last block, sharing its weights (the paper's n = 2)")

    def __post_init__(self):
        check_config(self)
        if self.emd_passes < 1:
            raise WarmstartError(f"mlm.emd_passes must be at least 1, got {self.emd_passes}", "e.g. 2")


def mask_tokens(
    ids: torch.Tensor,
    cfg: MLMConfig,
    mask_id: int,
    vocab_size: int,
    special_ids: torch.Tensor,
    generator: torch.Generator,
    word_start: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (corrupted inputs, labels) where labels are IGNORE except at selected positions.

    ``special_ids`` is a 1-D tensor of ids (CLS, SEP, PAD, ...) that are never selected nor sampled.
    ``word_start`` (a (vocab,) bool table from :func:`~warmstart.objectives.masking.word_starts`) is needed
    for ``cfg.masking`` whole_word and span. The [MASK] / random / keep choice is drawn per selected token.
    """
    selected = select_positions(ids, cfg, special_ids, generator, word_start)
    labels = torch.where(selected, ids, IGNORE)
    how = torch.rand(ids.shape, generator=generator)
    to_mask = selected & (how < cfg.mask_token_frac)
    to_random = selected & (how >= cfg.mask_token_frac) & (how < cfg.mask_token_frac + cfg.random_token_frac)
    inputs = torch.where(to_mask, mask_id, ids)
    # random replacements come from the non-special vocabulary
    allowed = torch.ones(vocab_size, dtype=torch.bool)
    allowed[special_ids] = False
    pool = allowed.nonzero().squeeze(1)
    picks = pool[torch.randint(len(pool), ids.shape, generator=generator)]
    inputs = torch.where(to_random, picks, inputs)
    return inputs, labels


class MLMHead(nn.Module):
    """dense + activation + LayerNorm, then the decoder tied to the word embeddings plus its own bias.

    The dense layer maps the hidden size to the embedding width (ALBERT, ELECTRA: H -> E; BERT: H -> H)."""

    def __init__(self, hidden: int, vocab_size: int, act: str, eps: float, tied: nn.Embedding):
        super().__init__()
        width = tied.embedding_dim
        self.dense = nn.Linear(hidden, width)
        self.act = activation(act)
        self.norm = nn.LayerNorm(width, eps=eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        self.tied = [tied]  # a list keeps the embedding out of this module's parameters

    def transform(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(self.act(self.dense(h)))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(self.transform(h), self.tied[0].weight, self.bias)


def masked_count(batch: dict) -> float:
    """The positions a masked-LM loss is a mean over."""
    return float((batch["labels"] != IGNORE).sum())


def masked_lm_loss(
    head: nn.Module, hidden: torch.Tensor, labels: torch.Tensor, norm: float | None = None, training=False
):
    """(mean loss, stats, (logits, picked, n)): cross-entropy over the selected positions only; the
    vocabulary projection runs only on them. ``logits[:n]`` belong to the flat positions ``picked[:n]``.
    ``norm``: divide the sum by this count instead of the batch's own (a step's count: train/step.py).
    ``training=True`` (the units pass ``self.training``) skips the arg-max accuracy, which the fit loop
    reads from evaluations only, and, with autograd on, projects and scores through the fused linear
    cross-entropy (fused_ce.py): the same loss and gradients, no logits kept (``logits`` is None)."""
    labels = labels.reshape(-1)
    picked = (labels != IGNORE).nonzero().squeeze(1)
    n = picked.numel()
    count = max(n if norm is None else norm, 1)
    if training and torch.is_grad_enabled() and isinstance(head, MLMHead):
        h = head.transform(hidden.reshape(-1, hidden.shape[-1]).index_select(0, picked))
        target = labels.index_select(0, picked)
        loss_sum, _ = linear_cross_entropy(h, head.tied[0].weight, target, IGNORE, bias=head.bias)
        return loss_sum / count, {"loss": (loss_sum.detach(), n)}, (None, picked, n)
    # round the row count up to a multiple of 64 (extra rows are ignored): a handful of distinct matmul
    # shapes instead of a new one every batch keeps kernel caches (oneDNN, cuBLAS) small and warm
    picked = F.pad(picked, (0, -n % 64))
    target = labels.index_select(0, picked)
    target[n:] = IGNORE
    logits = head(hidden.reshape(-1, hidden.shape[-1]).index_select(0, picked))
    loss_sum = F.cross_entropy(logits.float(), target, reduction="sum", ignore_index=IGNORE)
    stats = {"loss": (loss_sum.detach(), n)}
    if not training:
        stats["accuracy"] = ((logits[:n].argmax(-1) == target[:n]).sum(), n)
    return loss_sum / count, stats, (logits, picked, n)


class MaskedLM(Objective):
    """Training unit: encoder + MLM head. ``forward(batch) -> (loss, stats)``.

    The objective protocol `warmstart pretrain` uses: ``sections`` names the PretrainConfig sections the
    constructor takes after the encoder; ``data(shards, seq_len, tokenizer, *sections)`` gives the windows
    and the collator of its batches; ``hf_architecture`` goes into config.json.
    """

    sections = {"mlm": MLMConfig}
    hf_architecture = "BertForMaskedLM"
    takes_sift = True  # sift.attach may set ``sift``: forward then adds SiFT's penalty (objectives/sift.py)
    sift = None

    @staticmethod
    def check_tokenizer(tokenizer) -> None:
        """BERT-style packing needs CLS and SEP; masking needs a mask token."""
        if tokenizer.cls_id is None or tokenizer.sep_id is None:
            raise WarmstartError(
                f"the {tokenizer.algorithm} tokenizer has no CLS/SEP tokens, which BERT-style packing needs",
                "train a wordpiece or bpe tokenizer with `warmstart tokenizer train --kind wordpiece`",
            )
        if tokenizer.mask_id is None:
            raise WarmstartError(
                "the tokenizer has no mask token, which masked LM needs",
                "train a tokenizer with `warmstart tokenizer train`",
            )

    @staticmethod
    def data(shards, seq_len: int, tokenizer, cfg: MLMConfig):

        windows = PackedWindows(shards, seq_len, [tokenizer.cls_id], [tokenizer.sep_id])
        return windows, MLMCollator.for_tokenizer(cfg, tokenizer)

    @classmethod
    def recorded(cls, cfg) -> dict[str, dict]:
        """The shape sections, and the enhanced mask decoder when it is on: the head was trained on its
        states, which fill-mask then reads too (and export says it leaves it out)."""
        out = super().recorded(cfg)
        if cfg.mlm.emd:
            out["emd"] = {"passes": cfg.mlm.emd_passes}
        return out

    def __init__(self, encoder: nn.Module, cfg: MLMConfig):
        super().__init__()
        c = encoder.config
        self.cfg = cfg
        if cfg.emd:
            check_emd(encoder)
        self.encoder = encoder
        self.head = MLMHead(
            c.hidden_size, c.vocab_size, c.hidden_act, c.layer_norm_eps, encoder.word_embeddings
        )
        nn.init.normal_(self.head.dense.weight, std=c.initializer_range)
        nn.init.zeros_(self.head.dense.bias)

    def encode(self, batch: dict, last: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(the states the MLM head reads, the encoder's last layer): the same tensor twice, or with
        ``mlm.emd`` the enhanced mask decoder's states and (only when ``last``) the last layer."""
        if self.cfg.emd:
            return emd_states(self.encoder, batch, self.cfg.emd_passes, last)
        hidden = self.encoder(batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids"))
        return hidden, hidden

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        hidden, _ = self.encode(batch)
        loss, stats, _ = masked_lm_loss(self.head, hidden, batch["labels"], training=self.training)
        if sift_on(self):
            loss = loss + self.sift_term(batch, hidden, stats)
        return loss, stats

    def sift_term(self, batch: dict, hidden: torch.Tensor, stats: dict) -> torch.Tensor:
        """SiFT's weighted penalty on the head's distributions at the masked positions (the stats carry the
        penalty as ``sift``; the train loss the fit loop logs includes it)."""
        picked = (batch["labels"].reshape(-1) != IGNORE).nonzero().squeeze(1)
        logits = lambda h: self.head(h.reshape(-1, h.shape[-1]).index_select(0, picked))  # noqa: E731
        again = lambda: logits(self.encode(batch)[0])  # noqa: E731
        penalty = sift_penalty(self.encoder, again, logits(hidden), self.sift)
        stats["sift"] = (penalty.detach() * picked.numel(), picked.numel())
        return self.sift.weight * penalty

    @staticmethod
    def summarize(metrics: dict) -> dict:
        """Adds the perplexity of the masked-LM loss (``mlm_loss`` when the objective adds other losses)."""
        out = dict(metrics)
        mlm = out.get("mlm_loss", out.get("loss"))
        if mlm is not None:
            out["perplexity"] = float(torch.tensor(mlm).clamp(max=50).exp())
        return out


class MLMCollator:
    """Turns packed windows into a masked batch; the masks come from the batch's own generator.

    ``word_start``: the (vocab,) bool word-start table that ``masking`` whole_word and span need."""

    def __init__(self, cfg: MLMConfig, mask_id: int, vocab_size: int, special_ids, word_start=None):
        self.cfg, self.mask_id, self.vocab_size = cfg, mask_id, vocab_size
        self.special = torch.tensor(sorted(special_ids), dtype=torch.long)
        check_word_table(cfg, word_start)  # the config checked itself when it was made
        self.word_start = None if word_start is None else torch.as_tensor(word_start, dtype=torch.bool)

    @classmethod
    def for_tokenizer(cls, cfg: MLMConfig, tokenizer) -> MLMCollator:
        """The collator for ``tokenizer``'s ids: its special ids, and its word starts for word masking."""
        word_start = word_starts(tokenizer) if cfg.masking != "token" else None
        return cls(cfg, tokenizer.mask_id, tokenizer.vocab_size, tokenizer.special_ids, word_start)

    def __call__(self, ids: torch.Tensor, generator: torch.Generator) -> dict:
        inputs, labels = mask_tokens(
            ids, self.cfg, self.mask_id, self.vocab_size, self.special, generator, self.word_start
        )
        return {"input_ids": inputs, "labels": labels}
