"""Permutation language modelling (XLNet, Yang et al. 2019): predict tokens in a random factorisation
order, each from the tokens before it in that order, through XLNet's query stream.

Per sequence (packed windows of token shards, no padding): ``plm_probability`` of the non-special tokens
become targets, chosen as spans of 1..``max_span_length`` tokens spread over the sequence (the span-based
prediction of transformers' DataCollatorForPermutationLanguageModeling, with the exact share: the spans
are laid out among the context tokens by a uniform draw, so no edge of the window lowers it). The
factorisation order puts every other token first (the context, seen by all, seeing no target) and the
targets after it in a random order: partial prediction, only the last 1/K of the order is predicted,
K = 1 / plm_probability. ``perm_mask[i, j] = 1`` where token i may not attend to token j (j is a target
not before i in the order); ``target_mapping`` picks each target's query stream; the content stream of a
target still sees its own token, so the inputs are never replaced by a mask token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from warmstart.config import opt
from warmstart.data.packing import PackedWindows
from warmstart.errors import WarmstartError
from warmstart.objectives.base import Objective
from warmstart.objectives.lm_loss import IGNORE, head_loss, with_perplexity


@dataclass
class PLMConfig:
    plm_probability: float = opt(1 / 6, "share of the non-special tokens predicted per sequence (1/K)")
    max_span_length: int = opt(5, "the longest span of consecutive targets (spans are 1..this long)")

    def __post_init__(self):
        if not 0 < self.plm_probability < 1:
            raise WarmstartError(
                f"plm.plm_probability must lie in (0, 1), got {self.plm_probability}",
                "XLNet predicts 1/6 of the tokens: plm.plm_probability=0.1667",
            )
        if self.max_span_length < 1:
            raise WarmstartError(
                f"plm.max_span_length must be at least 1, got {self.max_span_length}",
                "use plm.max_span_length=5 (XLNet's)",
            )


def span_targets(n: int, cfg: PLMConfig, generator: torch.Generator) -> torch.Tensor:
    """(n,) bool: k = plm_probability * n targets (rounded up or down at random, so the share is exact on
    average) in spans of 1..max_span_length (the last one cut to the count), the spans placed among the
    n - k context tokens uniformly (stars and bars)."""
    share = cfg.plm_probability * n
    k = int(share) + int(float(torch.rand((), generator=generator)) < share - int(share))
    lengths = []
    while sum(lengths) < k:
        draw = int(torch.randint(1, cfg.max_span_length + 1, (1,), generator=generator))
        lengths.append(min(draw, k - sum(lengths)))
    m = len(lengths)
    targets = torch.zeros(n, dtype=torch.bool)
    if m == 0:
        return targets
    spans = torch.tensor(lengths)
    slots = torch.randperm(n - k + m, generator=generator)[:m].sort().values  # item slots of the spans
    starts = slots - torch.arange(m) + spans.cumsum(0) - spans  # context before + targets before
    offsets = torch.arange(k) - (spans.cumsum(0) - spans).repeat_interleave(spans)
    targets[starts.repeat_interleave(spans) + offsets] = True
    return targets


def factorisation(targets: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(T, T) perm_mask of one sequence: the context first (rank -1), the targets after it in a random
    order; 1 where i may not attend to j (j a target whose rank is not below i's)."""
    rank = torch.full(targets.shape, -1, dtype=torch.long)
    rank[targets] = torch.randperm(int(targets.sum()), generator=generator)
    return ((rank[:, None] <= rank[None, :]) & targets[None, :]).float()


class PLMCollator:
    """Packed windows -> ``input_ids``, ``perm_mask`` (B, T, T), ``target_mapping`` (B, P, T) one-hot rows
    (P = the batch's largest target count; unused rows are zero) and ``labels`` (B, P) (IGNORE where
    unused). Draws come from the batch's own generator (exact resume)."""

    def __init__(self, cfg: PLMConfig, special_ids):
        self.cfg = cfg
        self.special = torch.tensor(sorted(special_ids), dtype=torch.long)

    def __call__(self, ids: torch.Tensor, generator: torch.Generator) -> dict:
        b, t = ids.shape
        eligible = ~torch.isin(ids, self.special)
        targets = torch.zeros(b, t, dtype=torch.bool)
        for i in range(b):
            where = eligible[i].nonzero().squeeze(1)
            targets[i, where[span_targets(len(where), self.cfg, generator)]] = True
        perm_mask = torch.stack([factorisation(targets[i], generator) for i in range(b)])
        p = max(int(targets.sum(1).max()), 1)
        target_mapping = torch.zeros(b, p, t)
        labels = torch.full((b, p), IGNORE, dtype=torch.long)
        for i in range(b):
            where = targets[i].nonzero().squeeze(1)
            target_mapping[i, torch.arange(len(where)), where] = 1.0
            labels[i, : len(where)] = ids[i, where]
        return {"input_ids": ids, "perm_mask": perm_mask, "target_mapping": target_mapping, "labels": labels}


class PermutationLM(Objective):
    """Training unit: XLNet and its tied output layer with a trained bias (transformers' XLNetLMHeadModel).
    ``forward(batch) -> (loss, stats)``: cross-entropy of each target's query stream against its token."""

    sections = {"plm": PLMConfig}
    families = ("xlnet",)
    hf_architecture = "XLNetLMHeadModel"

    @staticmethod
    def data(shards, seq_len: int, tokenizer, cfg: PLMConfig):
        return PackedWindows(shards, seq_len, [], []), PLMCollator(cfg, tokenizer.special_ids)

    def __init__(self, model: nn.Module, cfg: PLMConfig):
        super().__init__()
        self.encoder, self.cfg = model, cfg  # "encoder.", as in every task unit: a finetune reads it alike
        if not isinstance(model.lm_bias, nn.Parameter):  # the output bias trains, as XLNetLMHeadModel's
            bias = model.lm_bias  # lm_loss.bias; the same state key, so a finetune reads it as a buffer
            del model.lm_bias
            model.lm_bias = nn.Parameter(bias)

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        out = self.encoder.streams(
            batch["input_ids"],
            batch.get("attention_mask"),
            perm_mask=batch["perm_mask"],
            target_mapping=batch["target_mapping"],
        )
        return head_loss(self.encoder, out.query, batch["labels"], self.training)

    summarize = staticmethod(with_perplexity)
