"""The graph of a finetuned unit: the method its ``predict`` scores with (``logits``, or ``scores`` for
multiple choice), taking the batch's tensors by name, traced by torch.onnx with batch and length dynamic.

SAMPLES holds an input of each dataset kind: it is encoded by the task itself (as `warmstart predict` would)
to give the batch that is traced, so the graph's inputs are the ones the task makes (input_ids,
attention_mask, token_type_ids; QA's context_mask; a choice's choice_mask, 3-D)."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from torch import nn

from warmstart.errors import WarmstartError

INPUTS = ("input_ids", "attention_mask", "token_type_ids", "context_mask", "choice_mask")
SAMPLES = {  # dataset kind -> records of that kind as inference/records.py makes them, two lengths (padding)
    "labeled": [{"text": "A warm, funny film.", "text_pair": "It was good."},
                {"text": "Slow and dull for most of two hours, it never finds a story.", "text_pair": "No."}],
    "tagging": [{"tokens": t, "text": " ".join(t), "tags": None}
                for t in (["The", "city", "of", "Paris"], ["It", "rains", "."])],
    "qa": [{"id": "a", "question": "Where is the city?", "context": c, "text": c, "answers": []}
           for c in ("The city lies on the river Seine.", "Nobody knows who built it first, or when.")],
    "choice": [{"text": "The cat sat", "choices": ["on the mat.", "in the sky.", "at noon."], "label": 0},
               {"text": "He ran", "choices": ["fast.", "home quickly after work."], "label": 0}],
}  # fmt: skip
OPSET = 17


def score_method(unit: nn.Module) -> str:
    """The name of the method ``unit.predict`` scores with."""
    return "scores" if hasattr(unit, "scores") else "logits"


class Graph(nn.Module):
    """``unit.<method>`` as a module of named tensors (the order of ``names``)."""

    def __init__(self, unit: nn.Module, names: list[str]):
        super().__init__()
        self.unit, self.names, self.method = unit, names, score_method(unit)

    def forward(self, *tensors):
        out = getattr(self.unit, self.method)(dict(zip(self.names, tensors, strict=True)))
        return tuple(out) if isinstance(out, tuple | list) else out


def sample_batch(task, tokenizer, labels) -> dict:
    """A padded batch of the task's own encoding of SAMPLES of its kind."""
    records = SAMPLES.get(task.kind)
    if records is None:
        raise WarmstartError(f"export --to onnx does not export {task.name} models yet", "use --to hf")
    features = task.encode(records, tokenizer, labels, "the export's sample input")
    return next(iter(features.eval_batches(len(records))))


def export_graph(unit: nn.Module, batch: dict, path: Path) -> tuple[list[str], list[str]]:
    """Write ``unit``'s scoring graph to ``path`` (ONNX, one file); (input names, output names)."""
    names = [n for n in INPUTS if isinstance(batch.get(n), torch.Tensor)]
    return trace(Graph(unit, names), batch, names, path)


def trace(graph: nn.Module, batch: dict, names: list[str], path: Path) -> tuple[list[str], list[str]]:
    """Write ``graph`` (a module taking ``batch``'s tensors ``names`` in order) to ``path``, batch and length
    dynamic; (input names, output names: the module's ``outputs`` when it names them)."""
    graph = graph.eval()  # a new module starts in training mode, and export restores it
    with torch.inference_mode():
        out = graph(*(batch[n] for n in names))
    outputs = [f"scores_{i}" for i in range(len(out))] if isinstance(out, tuple) else ["scores"]
    outputs = list(getattr(graph, "outputs", outputs))
    axes = {n: {0: "batch", batch[n].dim() - 1: "length"} for n in names}
    if "choice_mask" in names:  # (batch, choices, length) and (batch, choices)
        axes = {n: {0: "batch", 1: "choices", **({2: "length"} if n != "choice_mask" else {})} for n in names}
    with warnings.catch_warnings():  # the tracer's notes on Python-side shape checks: constants here
        warnings.simplefilter("ignore")
        torch.onnx.export(
            graph, tuple(batch[n] for n in names), str(path), input_names=names, output_names=outputs,
            dynamic_axes={**axes, **{o: {0: "batch"} for o in outputs}}, opset_version=OPSET, dynamo=False,
        )  # fmt: skip
    return names, outputs
