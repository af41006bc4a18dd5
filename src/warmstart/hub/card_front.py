"""The YAML front matter of an exported model's card, in the Hugging Face hub's schema.

Keys: ``library_name`` (transformers: the export loads with its Auto classes), ``base_model`` and
``license`` when known (:mod:`warmstart.hub.origin`), ``datasets`` (by name: :mod:`warmstart.hub.card_names`),
``pipeline_tag``, ``tags`` (warmstart, the family, the task or objective), ``metrics`` (the names of the
test metrics) and ``model-index`` with the test metrics (name; results: task {type, name}, dataset {name,
type, split: test}, metrics [{type, value, name}]), as ``huggingface_hub.ModelCard`` reads it back. No
``language``: a run does not record one. Written with yaml.safe_dump, so names with colons stay valid YAML.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from warmstart.registry import TASKS

PRETRAINED = {"mlm": "fill-mask", "gpt2": "text-generation", "t5": "text2text-generation",
              "bart": "text2text-generation"}  # fmt: skip


@dataclass
class Front:
    name: str  # the model's name (the export directory's)
    family: str  # transformers' model_type
    what: str  # the task (classification, tagging...) or the pretraining objective
    pipeline_tag: str | None = None
    base_model: str | None = None
    license: str | None = None
    datasets: list[str] = field(default_factory=list)
    test: dict = field(default_factory=dict)  # test metric -> value (test_metrics.json)
    test_data: tuple[str, str | None] | None = None  # (dataset name, config) the test split came from
    task_name: str = ""  # how the card names the task, e.g. "classification (single_label)"


def pipeline_tag(family: str, task: dict | None, objective: str | None) -> str | None:
    """The hub pipeline of a finetuned model's task, or of a pretrained model's family or objective."""
    if task:
        name = task.get("name", "classification")
        return TASKS[name].pipeline_tag if name in TASKS else None
    return PRETRAINED.get(family, PRETRAINED.get(objective or ""))


def _model_index(f: Front, metrics: dict) -> list[dict]:
    dataset_name, config = f.test_data or (f.datasets[0] if f.datasets else "unknown", None)
    dataset = {"name": dataset_name, "type": dataset_name, **({"config": config} if config else {}),
               "split": "test"}  # fmt: skip
    task = {"type": f.pipeline_tag or f.what, "name": f.task_name or f.what}
    rows = [{"type": k, "value": v, "name": f"test {k.replace('_', ' ')}"} for k, v in metrics.items()]
    return [{"name": f.name, "results": [{"task": task, "dataset": dataset, "metrics": rows}]}]


def front_matter(f: Front) -> dict:
    """The metadata, as a dict in the order the card writes it."""
    meta: dict = {"library_name": "transformers"}
    if f.base_model:
        meta["base_model"] = f.base_model
    if f.license:
        meta["license"] = f.license
    if f.datasets:
        meta["datasets"] = list(f.datasets)
    if f.pipeline_tag:
        meta["pipeline_tag"] = f.pipeline_tag
    meta["tags"] = list(dict.fromkeys(t for t in ("warmstart", f.family, f.what) if t))
    metrics = {k: v for k, v in f.test.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    if metrics:
        meta["metrics"] = list(metrics)
        meta["model-index"] = _model_index(f, metrics)
    return meta


def render(meta: dict) -> str:
    """``meta`` between the two ``---`` lines a card opens with."""
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000) + "---\n"
