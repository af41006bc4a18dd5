"""Which model a run holds, and the wrapper that serves it: one table, keyed by the finetuned task or,
for a pretrained run, by what it can do (write text, or fill in [MASK])."""

from __future__ import annotations

import json

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import resolve_checkpoint
from warmstart.errors import WarmstartError
from warmstart.registry import generates
from warmstart.serve.fill_mask import FillMaskModel
from warmstart.serve.finetuned import FinetunedModel
from warmstart.serve.generator import GeneratorModel

FINETUNED = ("classification", "tagging", "extractive_qa", "multiple_choice")


def _finetuned(run: str):

    return FinetunedModel(run)


def _text_to_text(run: str):

    return GeneratorModel.text_to_text(FinetunedModel(run))


def _generator(run: str):

    return GeneratorModel.pretrained(run)


def _fill_mask(run: str):

    return FillMaskModel(run)


LOADERS = {**dict.fromkeys(FINETUNED, _finetuned), "text_to_text": _text_to_text}


def open_model(run: str):
    """The served model of ``run`` (a run or model directory); WarmstartError for what cannot be served."""
    config_json = json.loads((resolve_checkpoint(run, prefer="best") / "config.json").read_text())
    card = RunCard.read(config_json)
    if card.finetuned:
        name = card.task_name
        if name not in LOADERS:
            raise WarmstartError(
                f"warmstart serve does not serve {name} models",
                f"use `warmstart predict {run}`, or serve a {', '.join(LOADERS)} run",
            )
        return LOADERS[name](run)
    return (_generator if generates(card.arch) else _fill_mask)(run)
