"""The front door to a saved model: ``SavedModel(path)`` resolves a run or model directory once
(checkpoints/resolve.py: the line that says which checkpoint answers), reads its config.json once, and loads
each part (a finetuned unit, an encoder, a generator) the first time it is asked for."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.head_view import check_head, head_view
from warmstart.checkpoints.load import load_encoder, load_finetuned, load_generator
from warmstart.checkpoints.resolve import read_config, resolve_checkpoint
from warmstart.deploy.onnx_encoder import is_onnx_encoder, load_onnx_encoder
from warmstart.deploy.onnx_unit import is_onnx_dir, load_onnx_finetuned
from warmstart.deploy.torch_int8 import is_torch_int8_dir, load_torch_int8
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
    ``config`` its config.json, ``card`` its run card, ``task`` what it does (a finetuned task's name,
    "generator" or "encoder"). ``prefer``: "best" for a finetune's selected model (a pretraining answers
    with final/ all the same), "final" for the end of training; ``use``: the verb of the fallback line;
    ``head``: the head of a multitask encoder that answers, as the single-task model it is
    (checkpoints/head_view.py)."""

    def __init__(self, path: str | Path, prefer: str = "best", use: str = "using", head: str | None = None):
        self.name, self.use, self.head = str(path), use, head
        self.onnx = is_onnx_dir(path)  # `export --to onnx`: its scores from onnxruntime (deploy/)
        self.int8 = is_torch_int8_dir(path)  # `export --to torch --quantize int8` (deploy/)
        deployed = self.onnx or self.int8
        self.path = Path(path) if deployed else resolve_checkpoint(path, prefer=prefer, use=use)
        self.path = head_view(self.path, head)  # the model directory itself, unless a head is named
        self.config = read_config(self.path)

    @cached_property
    def card(self) -> RunCard:
        return RunCard.read(self.config)

    @property
    def task(self) -> str:
        if self.card.finetuned:
            return self.card.task_name
        return "generator" if generates(self.card.arch) else "encoder"

    @cached_property
    def finetuned(self) -> Finetuned:
        """(unit, task, tokenizer, labels); a WarmstartError when the model is not finetuned, or is a
        multitask encoder given no head."""
        if self.head is None:  # the view of a named head is a single-task model
            check_head(self.config, None)
        if self.onnx:
            return Finetuned(*load_onnx_finetuned(self.path))
        if self.int8:
            return Finetuned(*load_torch_int8(self.path))
        return Finetuned(*load_finetuned(self.path, use=self.use))

    @cached_property
    def encoder(self) -> tuple[Any, Any, dict]:
        """(encoder, tokenizer, config.json) of the model's encoder, with its trained weights."""
        if self.onnx and is_onnx_encoder(self.config):  # sentence vectors from onnxruntime (deploy/)
            return load_onnx_encoder(self.path)
        self._refuse_onnx("encode texts")
        return load_encoder(self.path)

    @cached_property
    def generator(self) -> tuple[Any, Any, dict]:
        """(model, tokenizer, config.json) of a decoder or encoder-decoder, in eval mode."""
        self._refuse_onnx("generate text")
        return load_generator(self.path)

    def _refuse_onnx(self, what: str) -> None:
        if self.onnx or self.int8:
            block = self.config.get("onnx") or self.config.get("quantized") or {}
            form = "an ONNX" if self.onnx else "an int8"
            does = "encodes" if self.task == "encoder" else "predicts"
            raise WarmstartError(
                f"{self.name} is {form} export of a {self.task} model: it {does}; it does not {what}",
                f"pass the run it was exported from ({block.get('source', 'its run')})",
            )
