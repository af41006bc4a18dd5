"""One head of a multitask encoder as the single-task model it is: ``head_view(d, NAME)``.

A multitask encoder run (``--task multitask`` on bert, electra, xlnet or elmo; tasks/multitask_heads.py)
saves its shared encoder as ``encoder.*``, each head as ``heads.NAME.*`` and its label map as one JSON object
per head (name, task, problem, labels). The view of head NAME is an ordinary finetuned model directory: the
member's task options (its task and problem) and labels in config.json's card, the weights ``encoder.*`` and
``heads.NAME.*`` under the single-task unit's names (``encoder.*`` and the head's own), the tokenizer
beside them. Every command opens it through its normal path (``evaluate``, ``predict``, ``serve``,
``export --to hf|onnx|torch`` and ``warmstart.load`` take ``--head NAME`` / ``head=NAME``), so the head
behaves exactly as the single-task run of that member would. The directory is written once per process into
a temporary folder, removed when the process ends.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

from safetensors.torch import save_file

from warmstart.checkpoints.card import RunCard, checkpoint_config
from warmstart.checkpoints.load import saved_task
from warmstart.checkpoints.resolve import read_config
from warmstart.errors import WarmstartError
from warmstart.registry import generates
from warmstart.tasks.multitask_heads import head_specs, refusal
from warmstart.train.checkpoint import read_tensors

_VIEWS: dict[tuple[Path, str], Path] = {}  # (model directory, head) -> its view, made once per process


def heads_of(config_json: dict) -> list[dict] | None:
    """The head specs (name, task, problem, labels) of a multitask encoder's config.json; None for any
    other model (a single-task one, a text-to-text multitask, a pretrained one)."""
    card = RunCard.read(config_json)
    if card.task_name != "multitask" or generates(card.arch):
        return None
    return head_specs(card.labels)


def check_head(config_json: dict, head: str | None) -> dict | None:
    """The spec of head ``head`` of the model whose config.json is ``config_json`` (None when ``head`` is
    None and the model is not a multitask encoder); a WarmstartError for ``--head`` on another model, an
    unknown head, or a multitask encoder without ``--head``."""
    specs = heads_of(config_json)
    if specs is None:
        if head is None:
            return None
        card = RunCard.read(config_json)
        what = f"a {card.task_name} model" if card.finetuned else "a pretrained model"
        raise WarmstartError(
            f"--head {head} picks a head of a multitask encoder run, and this is {what}", "drop --head"
        )
    names = [s["name"] for s in specs]
    if head is None:
        raise refusal(names)
    if head not in names:
        raise WarmstartError(
            f"--head {head}: the multitask model has no head {head}",
            f"pass --head NAME (one of: {', '.join(names)})",
        )
    return specs[names.index(head)]


def head_view(d: Path, head: str | None, strict: bool = False) -> Path:
    """The model directory that answers for head ``head`` of the multitask model directory ``d`` (module
    docstring); ``d`` itself when ``head`` is None (``strict``: unless ``d`` is a multitask encoder, which
    is refused: what answers one input at a time). A WarmstartError as :func:`check_head` says."""
    if head is None and not strict:
        return d
    config_json = read_config(d)
    spec = check_head(config_json, head)
    if spec is None:
        return d
    key = (d.resolve(), spec["name"])
    if key not in _VIEWS or not (_VIEWS[key] / "model.safetensors").is_file():
        _VIEWS[key] = _write(d, config_json, spec)
    return _VIEWS[key]


def _write(d: Path, config_json: dict, spec: dict) -> Path:
    card = RunCard.read(config_json)
    task = saved_task(card.task, name=spec["task"], problem=spec["problem"] or "single_label")
    state = read_tensors(d / "model.safetensors")
    mine = f"heads.{spec['name']}."
    tensors = {k: v for k, v in state.items() if k.startswith("encoder.")}
    tensors.update({k[len(mine) :]: v for k, v in state.items() if k.startswith(mine)})
    out = Path(tempfile.mkdtemp(prefix=f"warmstart-head-{spec['name']}-"))
    atexit.register(shutil.rmtree, out, True)
    for f in d.iterdir():  # the tokenizer and what else the checkpoint holds beside its weights
        if f.is_file() and f.name not in ("config.json", "model.safetensors"):
            shutil.copy2(f, out / f.name)
    written = checkpoint_config(config_json, task, spec["labels"])
    (out / "config.json").write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / "model.safetensors"))
    return out
