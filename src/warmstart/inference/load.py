"""The front door to a saved model: ``SavedModel(path)`` resolves a run or model directory once
(checkpoints/resolve.py: the line that says which checkpoint answers), reads its config.json once, and loads
each part (a finetuned unit, an encoder, a generator) the first time it is asked for."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import load_encoder, load_finetuned, load_generator
from warmstart.checkpoints.resolve import read_config, resolve_checkpoint
from warmstart.deploy.onnx_unit import is_onnx_dir, load_onnx_finetuned
from warmstart.errors import WarmstartError
from warmstart.registry import generates


class Finetuned(NamedTuple):
    """A finetuned model as checkpoints/load.py's ``load_finetuned`` gives it, in eval mode."""

    unit: Any
    task: Any
    tokenizer: Any
    labels: list


class SavedModel:
    """A run or model directory: ``path`` the model directory that answers, ``name`` the path as given,
    ``config`` its config.json, ``card`` its run card, ``kind`` what it is (a finetuned task's name,
    "generator" or "encoder"). ``prefer``: "best" for a finetune's selected model (a pretraining answers
    with final/ all the same), "final" for the end of training; ``use``: the verb of the fallback line."""

    def __init__(self, path: str | Path, prefer: str = "best", use: str = "using"):
        self.name, self.use = str(path), use
        self.onnx = is_onnx_dir(path)  # `export --to onnx`: its scores from onnxruntime (deploy/)
        self.path = Path(path) if self.onnx else resolve_checkpoint(path, prefer=prefer, use=use)
        self.config = read_config(self.path)

    @cached_property
    def card(self) -> RunCard:
        return RunCard.read(self.config)

    @property
    def kind(self) -> str:
        if self.card.finetuned:
            return self.card.task_name
        return "generator" if generates(self.card.arch) else "encoder"

    @cached_property
    def finetuned(self) -> Finetuned:
        """(unit, task, tokenizer, labels); a WarmstartError when the model is not finetuned."""
        if self.onnx:
            return Finetuned(*load_onnx_finetuned(self.path))
        return Finetuned(*load_finetuned(self.path, use=self.use))

    @cached_property
    def encoder(self) -> tuple[Any, Any, dict]:
        """(encoder, tokenizer, config.json) of the model's encoder, with its trained weights."""
        self._refuse_onnx("encode texts")
        return load_encoder(self.path)

    @cached_property
    def generator(self) -> tuple[Any, Any, dict]:
        """(model, tokenizer, config.json) of a decoder or encoder-decoder, in eval mode."""
        self._refuse_onnx("generate text")
        return load_generator(self.path)

    def _refuse_onnx(self, what: str) -> None:
        if self.onnx:
            raise WarmstartError(
                f"{self.name} is an ONNX export of a {self.kind} model: it predicts; it does not {what}",
                f"pass the run it was exported from ({self.config['onnx'].get('source', 'its run')})",
            )
