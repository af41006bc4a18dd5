"""Load the encoder and tokenizer saved by a warmstart run, for finetuning or inspection."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.resolve import read_config, resolve_checkpoint
from warmstart.errors import WarmstartError
from warmstart.nn.sizing import build_within_memory, check_shapes
from warmstart.numbers import check_values
from warmstart.registry import MODELS, TASKS, family_of, lookup
from warmstart.tasks.base import TaskConfig
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.checkpoint import read_tensors


def model_config(config_json: dict):
    config_cls, model_cls = lookup(MODELS, "model", RunCard.read(config_json).arch)
    names = {f.name for f in dataclasses.fields(config_cls)}
    given = {k: v for k, v in config_json.items() if k in names}
    try:  # sizes and counts as config.py's rules take them: -2 layers is one line, not torch's error
        check_values(config_cls, given, nested=False)
    except WarmstartError as e:
        raise WarmstartError(
            f"the model's config.json: {e.problem}",
            "restore the config.json the weights were saved with, or use another checkpoint",
        ) from None
    return config_cls(**given), model_cls


def check_length(model_cfg, length: int, key: str) -> None:
    """Refuse inputs of ``length`` tokens (the setting ``key``) beyond the model's learned positions."""
    limit = getattr(model_cfg, "max_length", None)  # None: relative positions only (T5)
    if limit is not None and getattr(model_cfg, "position_biased_input", True) and length > limit:
        raise WarmstartError(
            f"{key} {length} exceeds the model's {limit} positions", f"use {key} {limit} or less"
        )


@dataclasses.dataclass
class Pretrained:
    """A run or checkpoint read once: its config.json, model config and class, tokenizer, and encoder weights
    (None: the untrained twin); ``encoder()`` builds a fresh encoder from them each time."""

    path: Path
    config_json: dict
    model_cfg: Any
    model_cls: type
    tokenizer: Tokenizer
    weights: dict | None

    def encoder(self):
        """A new encoder: built as any new model (its init draws from torch's RNG), then given the weights."""
        # weights=False: read_pretrained checked their shapes
        encoder = _build(lambda: self.model_cls(self.model_cfg), self.path, weights=False)
        if self.weights is None:
            if hasattr(encoder, "bind"):  # the twin reads the same words (ELMo's characters)
                encoder.bind(self.tokenizer)
            return encoder
        missing, _ = encoder.load_state_dict(self.weights, strict=False)
        if missing:
            raise WarmstartError(
                f"the checkpoint {self.path} lacks encoder weights: {', '.join(missing[:5])}",
                "pass a checkpoint written by `warmstart pretrain`",
            )
        return encoder


def read_pretrained(path: str | Path, random_init: bool = False) -> Pretrained:
    """A run or checkpoint's parts, its weights checked against its config and read once; ``random_init``:
    the untrained twin (no weights read)."""
    d = resolve_checkpoint(path)
    config_json = read_config(d)
    cfg, model_cls = model_config(config_json)
    if not random_init:
        check_shapes(lambda: model_cls(cfg), d / "model.safetensors", str(d / "config.json"))
    tokenizer = Tokenizer.load(d)
    if tokenizer.vocab_size != cfg.vocab_size:
        raise WarmstartError(
            f"the tokenizer in {d} has {tokenizer.vocab_size} tokens, the model {cfg.vocab_size}",
            "use the tokenizer the model was trained with",
        )
    weights = None
    if not random_init:
        state = read_tensors(d / "model.safetensors")
        prefix = "encoder." if any(k.startswith("encoder.") for k in state) else "model."
        weights = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    return Pretrained(d, config_json, cfg, model_cls, tokenizer, weights)


def load_encoder(path: str | Path, random_init: bool = False):
    """(encoder, tokenizer, config.json) from a run or checkpoint; ``random_init``: the untrained twin."""
    init = read_pretrained(path, random_init)
    return init.encoder(), init.tokenizer, init.config_json


def _build(build, d: Path, weights: bool = True):
    """``build()`` once its sizes are checked against the weights in ``d`` and against free memory."""
    source = str(d / "config.json")
    if weights:
        check_shapes(build, d / "model.safetensors", source)
    return build_within_memory(build, source, f"check the sizes in {source} (vocab_size, hidden_size, ...)")


def task_encoder(encoder):
    """What a task head goes on: the encoder itself, or what its family builds for tasks (ELMo: the biLM's
    layers mixed, then a task biLSTM)."""
    return encoder.task_encoder() if hasattr(encoder, "task_encoder") else encoder


def backbone(unit):
    """The model inside a training unit: ``model`` (decoders, encoder-decoders) or ``encoder`` (BERT)."""
    return unit.model if hasattr(unit, "model") else unit.encoder


def load_generator(path: str | Path):
    """(model, tokenizer, config.json) of a decoder or encoder-decoder run (GPT-2, T5, BART), in eval mode:
    RUN/final, or a model directory. The weights are the unit's ``model.*`` tensors."""
    d = resolve_checkpoint(path)
    config_json = read_config(d)
    cfg, model_cls = model_config(config_json)
    if not model_cls.generates:
        raise WarmstartError(
            f"{d} holds an encoder (model_type {config_json.get('model_type', 'bert')}), which does not "
            "generate text",
            "pass a gpt2, t5 or bart run (`warmstart pretrain --preset gpt2-mini ...`)",
        )
    model = _build(lambda: model_cls(cfg), d)
    state = read_tensors(d / "model.safetensors")
    own = {k[len("model.") :]: v for k, v in state.items() if k.startswith("model.")}
    missing, _ = model.load_state_dict(own, strict=False)
    if missing:
        raise WarmstartError(
            f"the checkpoint {d} lacks weights: {', '.join(missing[:5])}", "pass a run written by warmstart"
        )
    return model.eval(), Tokenizer.load(d), config_json


def saved_task(options: dict, **chosen):
    """The task a checkpoint's card describes: its task options (those TaskConfig knows), ``chosen`` over
    them."""
    names = {f.name for f in dataclasses.fields(TaskConfig)}
    task_cfg = TaskConfig(**{**{k: v for k, v in options.items() if k in names}, **chosen})
    return lookup(TASKS, "task", task_cfg.name)(task_cfg)


def load_finetuned(path: str | Path, use: str = "using"):
    """(unit, task, tokenizer, labels) of a finetuned model: RUN/best (the selected model), or a model
    directory. The head, its task options and the label map come from the checkpoint's config.json.
    ``use``: the verb of the line that says which checkpoint answers when best/ is missing."""
    d = resolve_checkpoint(path, prefer="best", use=use)
    config_json = read_config(d)
    card = RunCard.read(config_json)
    if not card.finetuned:
        raise WarmstartError(
            f"{d} holds a pretrained model, not a finetuned one",
            "pass the directory of a `warmstart finetune` run",
        )
    task = saved_task(card.task)
    cfg, model_cls = model_config(config_json)
    labels = card.labels
    tokenizer = Tokenizer.load(d)
    task.bind(tokenizer, config_json, family_of(config_json))
    unit = _build(lambda: task.build(task_encoder(model_cls(cfg)), labels), d)
    state = read_tensors(d / "model.safetensors")
    missing, unexpected = unit.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise WarmstartError(
            f"the weights in {d} do not fit a {task.name} model: "
            f"missing {', '.join(missing[:3]) or 'none'}; unexpected {', '.join(unexpected[:3]) or 'none'}",
            "pass a checkpoint written by `warmstart finetune`",
        )
    unit.eval()
    return unit, task, tokenizer, labels
