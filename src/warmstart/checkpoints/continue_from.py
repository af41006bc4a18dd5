"""Continued pretraining (DAPT / TAPT): start `warmstart pretrain` from an earlier run's weights.

The model's shape and tokenizer come from the starting checkpoint; only dropout may be changed. Weights
are copied wherever the new unit has a tensor of the same name and shape: the encoder always (it must be
complete), the objective's heads when the objective is the same, fresh heads otherwise (said in a line).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import backbone, model_config, read_config, resolve_checkpoint
from warmstart.errors import WarmstartError
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.checkpoint import read_tensors

# dropout rates of every family (bert, gpt2, t5, bart): the only model keys a continued run may change
CHANGEABLE = {
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
    "dropout_rate",
    "dropout",
    "attention_dropout",
}


@dataclasses.dataclass
class InitSource:
    path: Path
    model: object  # the model config dataclass of the starting checkpoint
    arch: str
    objective: str | None
    tokenizer: Tokenizer


def open_init(path: str, explicit_model: dict, arch: str) -> InitSource:
    """The starting checkpoint; a model key other than dropout set on the command line is an error."""
    d = resolve_checkpoint(path)
    config_json = read_config(d)
    card = RunCard.read(config_json)
    init_arch = card.arch
    if init_arch != arch:
        raise WarmstartError(
            f"--init {path} holds a {init_arch} model but arch is {arch}",
            f"drop arch or set arch={init_arch}",
        )
    fixed = sorted(set(explicit_model) - CHANGEABLE)
    if fixed:
        raise WarmstartError(
            f"model.{fixed[0]} is set, but the model's shape comes from --init {path}",
            "drop the model.* settings (only the dropout rates may change when continuing)",
        )
    model, _ = model_config(config_json)
    model = dataclasses.replace(model, **{k: v for k, v in explicit_model.items() if k in CHANGEABLE})
    return InitSource(d, model, init_arch, card.objective, Tokenizer.load(d))


def check_tokenizer(init: InitSource, other: Tokenizer | None, what: str) -> None:
    if other is not None and other.fingerprint() != init.tokenizer.fingerprint():
        raise WarmstartError(
            f"the {what} uses another vocabulary than --init {init.path} (continued pretraining keeps the "
            "starting model's tokenizer)",
            f"use the tokenizer in {init.path}, or prepare the text again with it",
        )


def load_weights(unit, init: InitSource) -> dict:
    """Copy matching tensors into ``unit``; returns {loaded, fresh: [prefixes]} for the run's init.json."""
    state = read_tensors(init.path / "model.safetensors")
    own = unit.state_dict()
    take = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    body = next(name for name, m in unit.named_children() if m is backbone(unit)) + "."
    missing_body = [k for k in own if k.startswith(body) and k not in take]
    if missing_body:
        raise WarmstartError(
            f"--init {init.path} lacks model weights (or has them in other shapes): "
            f"{', '.join(missing_body[:3])}",
            "pass a run or checkpoint written by `warmstart pretrain` or `warmstart finetune`",
        )
    unit.load_state_dict(take, strict=False)
    fresh = sorted({k.split(".")[0] for k in own if k not in take})
    return {"init": str(init.path), "loaded_tensors": len(take), "fresh": fresh}
