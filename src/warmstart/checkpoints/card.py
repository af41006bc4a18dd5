"""The run card: the "warmstart" block of a checkpoint's config.json."""

from __future__ import annotations

import dataclasses


def checkpoint_config(config_json: dict, task, labels: list[str]) -> dict:
    """config.json of a finetuned model: the encoder's, the task's architecture, and the label map."""
    block = dict(config_json.get("warmstart", {}))
    block["task"] = dataclasses.asdict(task.cfg)
    block["labels"] = list(labels)
    out = {**config_json, "architectures": [task.hf_architecture], "warmstart": block}
    if labels:
        out["id2label"] = dict(enumerate(labels))
        out["label2id"] = {name: i for i, name in enumerate(labels)}
        out["num_labels"] = len(labels)
    return out
