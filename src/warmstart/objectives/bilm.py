"""ELMo's bidirectional language model (Peters et al. 2018): on packed windows of token shards, the forward
LSTMs predict every next token and the backward LSTMs every previous one, through one shared softmax (the
fused linear cross-entropy of the decoders: no (N, V) logits while training). The loss is the mean over
both directions' predictions (seq_len - 1 each), and the validation metrics give each direction's loss and
perplexity besides the joint ones."""

from __future__ import annotations

import torch

from warmstart.errors import WarmstartError
from warmstart.objectives.clm import CausalLM
from warmstart.objectives.lm_loss import IGNORE, head_loss, with_perplexity


class BiLM(CausalLM):
    """Training unit: the ELMo model and its shared softmax. ``forward(batch) -> (loss, stats)``. Its data
    (packed windows) and tokenizer check are causal LM's."""

    families = ("elmo",)
    hf_architecture = ""  # transformers has no ELMo

    @staticmethod
    def check_model(model_cfg) -> None:
        if model_cfg.num_layers < 1:
            raise WarmstartError(
                "this ELMo has no LSTM layers (static word vectors): it has no language model to pretrain",
                "finetune it with --init, or pretrain an ELMo preset (e.g. --preset elmo-mini)",
            )

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        ids, mask = batch["input_ids"], batch.get("attention_mask")
        _, forward, backward = self.model.directions(ids, mask)
        after, before = ids[:, 1:], ids[:, :-1]  # what each direction predicts
        if mask is not None:
            after = after.masked_fill(mask[:, 1:] == 0, IGNORE)
            before = before.masked_fill(mask[:, 1:] == 0, IGNORE)  # the backward target of a padded position
        top = self.model.drop
        f_loss, f_stats = head_loss(self.model, top(forward[-1][:, :-1]), after, self.training)
        b_loss, b_stats = head_loss(self.model, top(backward[-1][:, 1:]), before, self.training)
        nf, nb = f_stats["loss"][1], b_stats["loss"][1]
        loss = (f_loss * nf + b_loss * nb) / max(nf + nb, 1)
        stats = {
            "loss": (f_stats["loss"][0] + b_stats["loss"][0], nf + nb),
            "forward_loss": f_stats["loss"],
            "backward_loss": b_stats["loss"],
        }
        if "accuracy" in f_stats:
            stats["accuracy"] = (f_stats["accuracy"][0] + b_stats["accuracy"][0], nf + nb)
        return loss, stats

    @staticmethod
    def summarize(metrics: dict) -> dict:
        """The joint perplexity, and each direction's."""
        out = with_perplexity(metrics)
        for side in ("forward", "backward"):
            if metrics.get(f"{side}_loss") is not None:
                out[f"{side}_perplexity"] = float(torch.tensor(metrics[f"{side}_loss"]).clamp(max=50).exp())
        return out
