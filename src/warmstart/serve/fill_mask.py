"""A masked-LM run (`warmstart pretrain` of an encoder with mlm, mlm+nsp or mlm+sop): top-k for [MASK]."""

from __future__ import annotations

import threading

from warmstart.inference.fill_mask import FillMask
from warmstart.inference.load import SavedModel


class FillMaskModel:
    task = "fill_mask"
    streams = False

    def __init__(self, saved: SavedModel):
        self.model = FillMask(saved)
        self.tokenizer, self.mask_token = self.model.tokenizer, self.model.mask_token
        self.lock = threading.Lock()

    def info(self) -> dict:
        return {"mask_token": self.mask_token}

    def predict(self, fields: dict, deadline: float | None = None) -> dict:
        """``{"text", "top_k"}`` -> ``{"text", "masks": [[{"token", "score"}, ...] per mask, in order]}``."""
        with self.lock:
            return self.model.fill(fields["text"], fields.get("top_k", 5))
