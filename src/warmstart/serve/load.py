"""Which model a run holds, and the wrapper that serves it: a finetuned task says how it is served
(``Task.served_as``: one forward pass, or generation); a pretrained run by what it can do (write text, or
fill in [MASK])."""

from __future__ import annotations

from warmstart.checkpoints.head_view import check_head
from warmstart.errors import WarmstartError
from warmstart.inference.load import SavedModel
from warmstart.registry import TASKS
from warmstart.serve.fill_mask import FillMaskModel
from warmstart.serve.finetuned import FinetunedModel
from warmstart.serve.generator import GeneratorModel


def _generation(saved: SavedModel):
    return GeneratorModel.text_to_text(saved.finetuned)


WRAPPERS = {"answer": FinetunedModel, "generation": _generation}  # Task.served_as -> the wrapper
LOADERS = {name: WRAPPERS[task.served_as] for name, task in TASKS.items() if task.served_as}


def open_model(run: str, head: str | None = None):
    """The served model of ``run`` (a run or model directory; ``head``: the head of a multitask encoder
    served, as the single-task model it is); WarmstartError for what cannot be served."""
    saved = SavedModel(run, head=head)
    if saved.card.finetuned:
        if head is None:
            check_head(saved.config, None)  # a multitask encoder serves one head: pass --head NAME
        name = saved.card.task_name
        if name not in LOADERS:
            raise WarmstartError(
                f"warmstart serve does not serve {name} models",
                f"use `warmstart predict {run}`, or serve a {', '.join(LOADERS)} run",
            )
        return LOADERS[name](saved)
    return (GeneratorModel.pretrained if saved.task == "generator" else FillMaskModel)(saved)
