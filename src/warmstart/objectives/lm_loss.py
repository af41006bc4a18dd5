"""Next-token cross-entropy shared by the generative objectives (causal LM, span corruption, denoising)
and text-to-text finetuning: loss and accuracy over the labelled positions, perplexity derived."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.objectives.base import Objective
from warmstart.objectives.fused_ce import linear_cross_entropy

IGNORE = -100


def head_loss(model: nn.Module, hidden: torch.Tensor, labels: torch.Tensor, training: bool):
    """``token_loss`` of ``model.lm_logits(hidden)``. While training, a model whose head is a projection
    (``linear_head(hidden) -> (h, W, b)``: logits = h @ W.T + b, b a constant or None) goes through the fused
    linear cross-entropy instead: the same loss and gradients, without the passes over fp32 (N, V) copies."""
    head = getattr(model, "linear_head", None)
    if training and head is not None and torch.is_grad_enabled():
        h, weight, bias = head(hidden)
        loss_sum, n = linear_cross_entropy(h, weight, labels, IGNORE, bias=bias)
        return loss_sum / max(n, 1), {"loss": (loss_sum.detach(), n)}
    return token_loss(model.lm_logits(hidden), labels, accuracy=not training)


def token_loss(
    logits: torch.Tensor, labels: torch.Tensor, accuracy: bool = True
) -> tuple[torch.Tensor, dict]:
    """(mean loss, stats) over positions whose label is not IGNORE; stats are (sum, count) pairs.

    ``accuracy=False`` skips the arg-max over the vocabulary (about a tenth of a small GPT's training step):
    the units pass ``not self.training``, since the fit loop reads stats only from evaluations."""
    flat = logits.reshape(-1, logits.shape[-1])
    target = labels.reshape(-1)
    n = int((target != IGNORE).sum())
    loss_sum = F.cross_entropy(flat.float(), target, reduction="sum", ignore_index=IGNORE)
    stats = {"loss": (loss_sum.detach(), n)}
    if accuracy:
        stats["accuracy"] = (((flat.argmax(-1) == target) & (target != IGNORE)).sum(), n)
    return loss_sum / max(n, 1), stats


def with_perplexity(metrics: dict) -> dict:
    """Adds exp(loss), capped at exp(50) so an untrained model's figure stays printable."""
    out = dict(metrics)
    if out.get("loss") is not None:
        out["perplexity"] = float(torch.tensor(out["loss"]).clamp(max=50).exp())
    return out


class Seq2SeqLM(Objective):
    """Training unit of the encoder-decoder objectives: teacher-forced decoder, loss on ``labels``.

    The batch is ``input_ids``, ``attention_mask``, ``decoder_input_ids`` (labels shifted right behind the
    decoder start token), ``decoder_attention_mask`` and ``labels`` (IGNORE on padding)."""

    families = ("t5", "bart")

    def __init__(self, model: nn.Module, *sections):
        super().__init__()
        self.model = model

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        hidden = self.model(
            batch["input_ids"],
            batch.get("attention_mask"),
            batch["decoder_input_ids"],
            batch.get("decoder_attention_mask"),
        )
        return head_loss(self.model, hidden, batch["labels"], self.training)

    summarize = staticmethod(with_perplexity)
