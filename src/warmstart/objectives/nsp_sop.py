"""Masked LM plus a sentence-pair task: next-sentence prediction (BERT) or sentence-order prediction (ALBERT).

An example is ``[CLS] A [SEP] B [SEP]`` built from two segments of the corpus (see
:mod:`warmstart.data.sentence_pairs`), masked as in MLM. A linear layer on the encoder's pooled [CLS]
(``encoder.pool``) predicts the pair label: for NSP 0 = B follows A, 1 = B is from another document; for
SOP 0 = in order, 1 = swapped. loss = MLM loss + ``nsp.weight`` x cross-entropy of the pair label.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.config import opt
from warmstart.data.sentence_pairs import PairWindows, draw_pairs, encode_pairs
from warmstart.errors import WarmstartError
from warmstart.objectives.mlm import MaskedLM, MLMCollator, MLMConfig, masked_count, masked_lm_loss


@dataclass
class NSPConfig:
    weight: float = opt(
        1.0, "weight of the sentence-pair loss (next-sentence or sentence-order) added to MLM"
    )


class SentencePairCollator:
    """A batch of A chunk ids -> pairs drawn with the batch's generator, laid out and then MLM-masked.

    Keys: input_ids, attention_mask, token_type_ids, labels (MLM, -100 = ignored), sentence_label."""

    def __init__(self, windows: PairWindows, pair_task: str, seq_len: int, tokenizer, mlm: MLMConfig):
        pad = tokenizer.pad_id
        if pad is None:
            raise WarmstartError(
                "the tokenizer has no pad token, which sentence pairs of different lengths need",
                "train a tokenizer with `warmstart tokenizer train`",
            )
        self.chunks, self.pair_task, self.seq_len = windows.chunks, pair_task, seq_len
        self.cls_id, self.sep_id, self.pad_id = tokenizer.cls_id, tokenizer.sep_id, pad
        self.mask = MLMCollator.for_tokenizer(mlm, tokenizer)  # [CLS], [SEP], [PAD] are special ids

    def __call__(self, a: torch.Tensor, generator: torch.Generator) -> dict:
        pairs = draw_pairs(self.chunks, a, self.pair_task, generator)
        ids = (self.cls_id, self.sep_id, self.pad_id)
        batch = encode_pairs(self.chunks, pairs, self.pair_task, self.seq_len, *ids)
        batch.update(self.mask(batch["input_ids"], generator))
        batch["sentence_label"] = pairs[2]
        return batch


class NextSentenceLM(MaskedLM):
    """Training unit: encoder + MLM head + a 2-way classifier on the pooled [CLS] (BERT's NSP).

    ``encoder`` is the model finetuning loads (weights under ``encoder.``); ``head`` is MaskedLM's MLM head;
    ``sentence_head`` is HF BertForPreTraining's ``cls.seq_relationship``."""

    sections = {"mlm": MLMConfig, "nsp": NSPConfig}
    data_kind = "sentence_pairs"
    hf_architecture = "BertForPreTraining"
    pair_task = "nsp"
    takes_sift = False

    @classmethod
    def data(cls, shards, seq_len: int, tokenizer, mlm: MLMConfig, nsp: NSPConfig):
        """(windows of A chunk ids, collator) over the documents of ``shards``; called as on MaskedLM."""
        windows = PairWindows(shards, seq_len, cls.pair_task)
        return windows, SentencePairCollator(windows, cls.pair_task, seq_len, tokenizer, mlm)

    def __init__(self, encoder: nn.Module, mlm: MLMConfig, nsp: NSPConfig):
        if getattr(encoder, "pooler", None) is None:
            raise WarmstartError(
                f"the encoder has no pooler, which {self.pair_task} reads (the pooled [CLS] state)",
                "set model.pooler=true",
            )
        super().__init__(encoder, mlm)
        c = encoder.config
        self.nsp = nsp
        self.sentence_head = nn.Linear(c.hidden_size, 2)
        nn.init.normal_(self.sentence_head.weight, std=c.initializer_range)
        nn.init.zeros_(self.sentence_head.bias)

    def counts(self, batch: dict) -> dict[str, float]:
        """The two means the loss adds: over masked positions, over sentence pairs (train/step.py)."""
        return {"mlm": masked_count(batch), "sentence": float(batch["sentence_label"].numel())}

    def forward(self, batch: dict, norms: dict | None = None) -> tuple[torch.Tensor, dict]:
        mlm_hidden, hidden = self.encode(batch, last=True)
        mlm_norm = norms["mlm"] if norms else None
        mlm_loss, mlm_stats, _ = masked_lm_loss(
            self.head, mlm_hidden, batch["labels"], mlm_norm, training=self.training
        )
        logits = self.sentence_head(self.encoder.pool(hidden))
        target = batch["sentence_label"]
        n = target.numel()
        sentence_sum = F.cross_entropy(logits.float(), target, reduction="sum")
        loss = mlm_loss + self.nsp.weight * sentence_sum / max(norms["sentence"] if norms else n, 1)
        correct = (logits.argmax(-1) == target).sum()
        stats = {
            "loss": (loss.detach(), 1),
            "mlm_loss": mlm_stats["loss"],
            "sentence_loss": (sentence_sum.detach(), n),
            "sentence_accuracy": (correct, n),
        }
        if "accuracy" in mlm_stats:  # an evaluation
            stats["accuracy"] = mlm_stats["accuracy"]
        return loss, stats


class SentenceOrderLM(NextSentenceLM):
    """ALBERT's sentence-order prediction: two consecutive segments, in order (0) or swapped (1)."""

    pair_task = "sop"
