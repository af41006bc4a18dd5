"""A finetuned directory's unit built from its config.json alone (the task, its options and label map from
the run card; no weights read): the frame that an ONNX graph (deploy/onnx_unit.py) or int8 weights
(deploy/torch_int8.py) fill."""

from __future__ import annotations

from pathlib import Path

import torch

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import model_config, saved_task, task_encoder
from warmstart.checkpoints.resolve import read_config
from warmstart.errors import WarmstartError
from warmstart.registry import family_of
from warmstart.tokenization.tokenizer import Tokenizer


def task_shell(d: Path, device: str, what: str) -> tuple:
    """(unit, task, tokenizer, labels) of the finetuned directory ``d``, the unit built on ``device``
    ("meta": no memory) in eval mode; ``what``: the export's flag, for the line refusing a pretrained one."""
    config_json = read_config(d)
    card = RunCard.read(config_json)
    if not card.finetuned:
        raise WarmstartError(f"{d} holds no finetuned task", f"export a `warmstart finetune` run {what}")
    task = saved_task(card.task)
    cfg, model_cls = model_config(config_json)
    tokenizer = Tokenizer.load(d)
    task.bind(tokenizer, config_json, family_of(config_json))
    with torch.device(device):
        unit = task.build(task_encoder(model_cls(cfg)), card.labels).eval()
    return unit, task, tokenizer, card.labels
