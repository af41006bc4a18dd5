"""ELECTRA (Clark et al., 2020): replaced-token detection.

A small generator (a masked LM reading the discriminator's embeddings) fills the masked positions with
tokens sampled from its predictions; the discriminator sees the result and predicts, for every token,
whether it was replaced. A sampled token that equals the original counts as original, as in the paper.
loss = generator MLM loss + ``rtd_weight`` x discriminator loss (lambda = 50 in the paper). The
discriminator is ``unit.encoder``: it is the model that `warmstart finetune` loads afterwards.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertModel, embedding_width
from warmstart.nn.mlp import activation
from warmstart.objectives.base import Objective
from warmstart.objectives.mlm import IGNORE, MaskedLM, MLMConfig, MLMHead, masked_count, masked_lm_loss

EVAL_SAMPLING_SEED = 1234  # evaluation samples the same replacements every time: comparable curves


@dataclass
class ElectraConfig:
    generator_size: float = opt(
        0.25, "generator width as a fraction of the discriminator's hidden size, FFN size and heads"
    )
    generator_layers: int | None = opt(None, "generator depth (default: the discriminator's)")
    rtd_weight: float = opt(50.0, "lambda: weight of the replaced-token-detection loss (the paper's 50)")
    temperature: float = opt(1.0, "temperature of the generator's sampling")


def generator_config(disc, cfg: ElectraConfig):
    """The generator's encoder config: the discriminator's, scaled in width; same embedding width."""
    f = cfg.generator_size
    if not 0 < f <= 1:
        raise WarmstartError(f"electra.generator_size={f} is out of range", "use a fraction in (0, 1]")
    heads = max(1, round(disc.num_attention_heads * f))
    hidden = max(heads, round(disc.hidden_size * f) // heads * heads)
    return dataclasses.replace(
        disc,
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=max(1, round(disc.intermediate_size * f)),
        num_hidden_layers=cfg.generator_layers or disc.num_hidden_layers,
        embedding_size=embedding_width(disc),
        pooler=False,
    )


def generator_section(disc, shape: dict, recorded: ElectraConfig | None = None) -> ElectraConfig | None:
    """The electra section whose generator has ``shape`` (hidden_size, intermediate_size, num_hidden_layers
    and, when known, num_attention_heads): ``recorded`` when it fits, else the width fraction read from the
    hidden or FFN size; None when no fraction gives that generator."""
    base = recorded or ElectraConfig()
    layers = shape["num_hidden_layers"]
    tries = [recorded] if recorded else []
    for f in (shape["hidden_size"] / disc.hidden_size, shape["intermediate_size"] / disc.intermediate_size):
        more = None if layers == disc.num_hidden_layers else layers
        tries.append(dataclasses.replace(base, generator_size=f, generator_layers=more))
    for cfg in tries:
        if not 0 < cfg.generator_size <= 1:
            continue
        g = dataclasses.asdict(generator_config(disc, cfg))
        if all(g[k] == v for k, v in shape.items()):
            return cfg
    return None


def sample(logits: torch.Tensor, temperature: float, generator: torch.Generator | None = None):
    """One token per row of ``logits``, drawn from softmax(logits / temperature) by the Gumbel-max trick."""
    u = torch.rand(logits.shape, device=logits.device, generator=generator).clamp_(1e-9, 1.0)
    return (logits.float() / temperature - torch.log(-torch.log(u))).argmax(-1)


def replace_tokens(input_ids, labels, positions, sampled):
    """(discriminator input, replaced labels): ``sampled`` written at the flat ``positions``; a token is
    'replaced' only where it now differs from the original (labels hold the originals at masked positions)."""
    original = torch.where(labels != IGNORE, labels, input_ids)
    corrupted = input_ids.reshape(-1).clone()
    corrupted[positions] = sampled.to(corrupted.dtype)
    corrupted = corrupted.view_as(input_ids)
    return corrupted, corrupted != original


class DiscriminatorHead(nn.Module):
    """dense + activation + a one-logit projection per token (replaced or original)."""

    def __init__(self, hidden: int, act: str):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.act = activation(act)
        self.prediction = nn.Linear(hidden, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.prediction(self.act(self.dense(h))).squeeze(-1)


class ReplacedTokenDetection(Objective):
    """Training unit: generator + discriminator sharing the token (and position, segment) embeddings."""

    sections = {"mlm": MLMConfig, "electra": ElectraConfig}
    hf_architecture = "ElectraForPreTraining"
    shape_sections = ("electra",)  # config.json records them: they give the generator's shape
    summarize = staticmethod(MaskedLM.summarize)
    check_tokenizer = staticmethod(MaskedLM.check_tokenizer)  # perplexity of the generator's MLM loss

    @staticmethod
    def data(shards, seq_len: int, tokenizer, mlm: MLMConfig, cfg: ElectraConfig):
        return MaskedLM.data(shards, seq_len, tokenizer, mlm)  # the generator's input: masked windows

    def __init__(self, encoder: nn.Module, mlm: MLMConfig, cfg: ElectraConfig):
        super().__init__()
        if mlm.emd:
            raise WarmstartError(
                "mlm.emd (the enhanced mask decoder) is for the mlm, mlm+nsp and mlm+sop objectives",
                "drop mlm.emd=true with --objective electra",
            )
        c = encoder.config
        self.cfg = cfg
        self.encoder = encoder
        g = generator_config(c, cfg)
        self.generator = BertModel(g, shared_embeddings=encoder.embedding_module)
        self.generator_head = MLMHead(
            g.hidden_size, c.vocab_size, c.hidden_act, c.layer_norm_eps, encoder.word_embeddings
        )
        self.discriminator_head = DiscriminatorHead(c.hidden_size, c.hidden_act)
        for m in (
            self.generator_head.dense,
            self.discriminator_head.dense,
            self.discriminator_head.prediction,
        ):
            nn.init.normal_(m.weight, std=c.initializer_range)
            nn.init.zeros_(m.bias)

    def counts(self, batch: dict) -> dict[str, float]:
        """The two means the loss adds: the generator's over masked positions, the discriminator's over
        every (unpadded) token (train/step.py)."""
        mask = batch.get("attention_mask")
        tokens = float(mask.sum()) if mask is not None else float(batch["input_ids"].numel())
        return {"mlm": masked_count(batch), "rtd": tokens}

    def forward(self, batch: dict, norms: dict | None = None) -> tuple[torch.Tensor, dict]:
        ids, mask, types = batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids")
        hidden = self.generator(ids, mask, types)
        norm = norms["mlm"] if norms else None
        gen_loss, stats, (logits, picked, n) = masked_lm_loss(
            self.generator_head, hidden, batch["labels"], norm
        )
        with torch.no_grad():
            rng = None
            if not self.training:
                rng = torch.Generator(ids.device).manual_seed(EVAL_SAMPLING_SEED)
            sampled = sample(logits[:n], self.cfg.temperature, rng)
        corrupted, replaced = replace_tokens(ids, batch["labels"], picked[:n], sampled)
        scores = self.discriminator_head(self.encoder(corrupted, mask, types))
        weight = mask.float() if mask is not None else torch.ones_like(scores)
        target = replaced.float()
        rtd_sum = (
            F.binary_cross_entropy_with_logits(scores.float(), target, reduction="none") * weight
        ).sum()
        tokens = weight.sum()
        rtd_loss = rtd_sum / (max(norms["rtd"], 1) if norms else tokens.clamp(min=1))
        loss = gen_loss + self.cfg.rtd_weight * rtd_loss
        correct = (((scores > 0) == replaced).float() * weight).sum()
        stats = {
            "loss": (loss.detach(), 1),
            "mlm_loss": stats["loss"],
            "accuracy": stats["accuracy"],
            "rtd_loss": (rtd_sum.detach(), tokens),
            "rtd_accuracy": (correct, tokens),
            "replaced": ((target * weight).sum(), tokens),
        }
        return loss, stats
