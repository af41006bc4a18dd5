"""`warmstart probe --hans RUN`: is a finetuned pair classifier right for the wrong reasons? Its accuracy on
HANS-style pairs (analysis/hans_templates.py), per heuristic, on the pairs the heuristic gets right
(entailed) and on those it gets wrong (not entailed). A model that leans on the heuristic scores high on
the first and near 0 on the second.

A prediction of the entailment label counts as entailed, any other label (neutral, contradiction,
not_entailment) as not entailed, as in HANS.
"""

from __future__ import annotations

import sys

from warmstart.analysis.hans_templates import TEMPLATES, hans_examples
from warmstart.errors import WarmstartError
from warmstart.inference.load import SavedModel
from warmstart.inference.predict import Predictor

FILE = "hans.json"


def entailment_label(labels: list, given: str | None) -> str:
    """The label of the model that means "entailed": ``given``, else the one named entailment."""
    names = [str(n) for n in labels]
    wanted = given or "entailment"
    if wanted not in names:
        raise WarmstartError(
            f"the model's labels ({', '.join(names)}) have no '{wanted}'",
            "name the label that means entailed, e.g. --entailment-label 1",
        )
    return wanted


def hans_probe(run: str, entailment: str | None = None, per_template: int = 50, seed: int = 0) -> dict:
    """{"entailment_label", "heuristics": {name: {"entailed": {...}, "not_entailed": {...}}}, "examples"}."""
    model = SavedModel(run, prefer="best", use="probing").finetuned
    problem = getattr(getattr(model.task, "cfg", None), "problem", None)
    if model.task.kind != "labeled" or problem != "single_label" or len(model.labels) < 2:
        raise WarmstartError(
            f"{run} is not a finetuned classifier of text pairs",
            "pass a run finetuned on an NLI task (MNLI, RTE)",
        )
    label = entailment_label(model.labels, entailment)
    examples = hans_examples(per_template, seed)
    print(f"HANS-style probe: {len(examples):,} pairs", file=sys.stderr)
    outputs = Predictor(model).outputs([{"text": e["text"], "text_pair": e["text_pair"]} for e in examples])
    for e, o in zip(examples, outputs, strict=True):
        e["predicted"] = o["label"]
        e["correct"] = (o["label"] == label) == e["entailed"]
    heuristics = {}
    for name in TEMPLATES:
        heuristics[name] = {}
        for side, entailed in (("entailed", True), ("not_entailed", False)):
            mine = [e for e in examples if e["heuristic"] == name and e["entailed"] == entailed]
            heuristics[name][side] = {"accuracy": sum(e["correct"] for e in mine) / len(mine), "n": len(mine)}
    return {"run": run, "entailment_label": label, "heuristics": heuristics, "examples": examples}


def markdown(result: dict) -> str:
    lines = ["| heuristic | entailed: accuracy | not entailed: accuracy | pairs |", "|---|---:|---:|---:|"]
    for name, sides in result["heuristics"].items():
        yes, no = sides["entailed"], sides["not_entailed"]
        lines.append(f"| {name} | {yes['accuracy']:.4f} | {no['accuracy']:.4f} | {yes['n'] + no['n']} |")
    note = (
        f"A prediction of '{result['entailment_label']}' counts as entailed. Leaning on a heuristic shows as "
        "a high score on its entailed pairs and a low one on its not-entailed pairs."
    )
    return "\n".join(lines) + "\n\n" + note
