"""Causal language modelling (GPT): predict every next token of packed sequences.

Documents are packed back to back with the end-of-text token between them (the shards' separator), so a
sequence may start mid-document and the model learns where documents end. Every position but the last is
a training target: seq_len - 1 predictions per sequence.
"""

from __future__ import annotations

import torch
from torch import nn

from warmstart.data.packing import PackedWindows
from warmstart.errors import WarmstartError
from warmstart.objectives.base import Objective
from warmstart.objectives.lm_loss import IGNORE, head_loss, with_perplexity


class CausalLM(Objective):
    """Training unit: decoder + tied output head. ``forward(batch) -> (loss, stats)``."""

    families = ("gpt2",)
    hf_architecture = "GPT2LMHeadModel"

    @staticmethod
    def check_tokenizer(tokenizer) -> None:
        if tokenizer.eos_id is None and tokenizer.sep_id is None:
            raise WarmstartError(
                "the tokenizer has no end-of-text token to separate packed documents",
                "train one with `warmstart tokenizer train` (--kind bpe for gpt2, --kind word for elmo)",
            )

    @staticmethod
    def data(shards, seq_len: int, tokenizer):

        return PackedWindows(shards, seq_len, [], []), collate

    @staticmethod
    def text_pairs(seq_len: int, tokenizer):
        """Windows of ``seq_len`` tokens as (first token, the rest): the completion's loss is every next
        token after the first, seq_len - 1 predictions, as in pretraining."""
        return seq_len, lambda ids, generator: (ids[:1], ids[1:])

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        ids = batch["input_ids"]
        hidden = self.model(ids, batch.get("attention_mask"))
        labels = ids[:, 1:]
        if "attention_mask" in batch:
            labels = labels.masked_fill(batch["attention_mask"][:, 1:] == 0, IGNORE)
        return head_loss(self.model, hidden[:, :-1], labels, self.training)

    summarize = staticmethod(with_perplexity)


def collate(ids: torch.Tensor, generator: torch.Generator) -> dict:
    return {"input_ids": ids}
