"""Which model a run holds, and the wrapper that serves it: a finetuned task says how it is served
(``Task.served_as``: one forward pass, or generation); a pretrained run by what it can do (write text, or
fill in [MASK])."""

from __future__ import annotations

from warmstart.errors import WarmstartError
from warmstart.inference.load import SavedModel
from warmstart.registry import TASKS, generates
from warmstart.serve.fill_mask import FillMaskModel
from warmstart.serve.finetuned import FinetunedModel
from warmstart.serve.generator import GeneratorModel


def _generation(saved: SavedModel):
    return GeneratorModel.text_to_text(saved.finetuned)


WRAPPERS = {"answer": FinetunedModel, "generation": _generation}  # Task.served_as -> the wrapper
LOADERS = {name: WRAPPERS[task.served_as] for name, task in TASKS.items() if task.served_as}


def open_model(run: str):
    """The served model of ``run`` (a run or model directory); WarmstartError for what cannot be served."""
    saved = SavedModel(run)
    if saved.card.finetuned:
        name = saved.card.task_name
        if name == "multitask" and not generates(saved.card.arch):  # one head per task: no one input to serve
            raise WarmstartError(
                "warmstart serve does not serve a multitask encoder (one head per task)",
                "finetune its shared encoder on one task (warmstart finetune --init RUN --dataset NAME) "
                "and serve that run",
            )
        if name not in LOADERS:
            raise WarmstartError(
                f"warmstart serve does not serve {name} models",
                f"use `warmstart predict {run}`, or serve a {', '.join(LOADERS)} run",
            )
        return LOADERS[name](saved)
    return (GeneratorModel.pretrained if saved.task == "generator" else FillMaskModel)(saved)
