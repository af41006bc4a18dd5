"""A masked-LM run (`warmstart pretrain` of an encoder with mlm, mlm+nsp or mlm+sop): top-k for [MASK]."""

from __future__ import annotations

import threading

import torch
from safetensors.torch import load_file

from warmstart.errors import WarmstartError
from warmstart.objectives.mlm import MLMHead
from warmstart.pretrained import load_encoder, resolve_checkpoint
from warmstart.train.loop import pick_device

MLM_OBJECTIVES = ("mlm", "mlm+nsp", "mlm+sop")  # their units keep the MLM head as ``head.*``


class FillMaskModel:
    kind = "fill_mask"
    streams = False

    def __init__(self, run: str):
        encoder, self.tokenizer, config_json = load_encoder(run)
        objective = config_json.get("warmstart", {}).get("objective")
        if objective not in MLM_OBJECTIVES or self.tokenizer.mask_id is None:
            raise WarmstartError(
                f"{run} was pretrained with {objective or 'an unknown objective'}, which has no MLM head",
                "serve a run pretrained with mlm, mlm+nsp or mlm+sop, or a finetuned or generating run",
            )
        c = encoder.config
        head = MLMHead(c.hidden_size, c.vocab_size, c.hidden_act, c.layer_norm_eps, encoder.word_embeddings)
        state = load_file(str(resolve_checkpoint(run) / "model.safetensors"))
        head.load_state_dict({k[len("head.") :]: v for k, v in state.items() if k.startswith("head.")})
        self.device = pick_device("auto")
        self.encoder, self.head = encoder.eval().to(self.device), head.eval().to(self.device)
        self.mask_token = self.tokenizer.roles["mask_token"]
        self.max_length = c.max_position_embeddings
        self.lock = threading.Lock()

    def info(self) -> dict:
        return {"mask_token": self.mask_token}

    def predict(self, fields: dict, deadline: float | None = None) -> dict:
        """``{"text", "top_k"}`` -> ``{"text", "masks": [[{"token", "score"}, ...] per mask, in order]}``."""
        text, top_k = fields["text"], fields.get("top_k", 5)
        (ids,), (types,) = self.tokenizer.encode_pairs([text], max_length=self.max_length)
        where = [i for i, t in enumerate(ids) if t == self.tokenizer.mask_id]
        if not where:
            raise WarmstartError(
                f"the text has no {self.mask_token} within the model's {self.max_length} tokens",
                f"put {self.mask_token} where a word should be guessed",
            )
        with self.lock, torch.no_grad():
            hidden = self.encoder(torch.tensor([ids], device=self.device), None,
                                  torch.tensor([types], device=self.device))  # fmt: skip
            probs = self.head(hidden[0, where]).float().softmax(-1)
            scores, best = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
        masks = [
            [{"token": self.tokenizer.id_to_token(int(t)), "score": round(float(s), 6)} for s, t in zip(*row)]
            for row in zip(scores, best)
        ]
        return {"text": text, "masks": masks}
