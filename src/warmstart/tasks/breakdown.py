"""Where a classifier or tagger is right and wrong: per-class precision, recall and F1, the confusion matrix,
the majority-class baseline, and how many classes the model predicts at all.

Units that can be broken down have ``gold_and_predicted(batch) -> (gold ids, predicted ids)`` (one id per
example for single-label classification, per word for tagging; ignored positions are left out).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from warmstart.train.precision import autocast


@torch.no_grad()
def breakdown(
    unit,
    batches,
    device: torch.device,
    train_counts: dict[str, int] | None = None,
    dtype: torch.dtype | bool | None = None,
) -> dict | None:
    """The test split's breakdown (None for units without ``gold_and_predicted``), in a pass of its own;
    ``dtype``: the autocast dtype the run trained with (True: bfloat16). ``counting`` gives the same
    during an evaluation's pass."""
    if not breakable(unit):
        return None
    confusion = Confusion(unit.labels)
    unit.to(device).eval()
    for batch in batches:
        batch = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
        with autocast(device, dtype):
            confusion.add(*unit.gold_and_predicted(batch))
    return confusion.summary(train_counts)


def breakable(unit) -> bool:
    """Whether ``unit`` is a single-label classifier or a tagger (one gold and one predicted id each)."""
    return hasattr(unit, "gold_and_predicted") and getattr(unit, "problem", "single_label") == "single_label"


@contextmanager
def counting(unit) -> Iterator[Confusion | None]:
    """While the block runs (an evaluation of ``unit``), each batch's logits are also counted into a
    Confusion, yielded (None for a unit without a breakdown): the per-class breakdown without a second
    forward pass. The unit's ``logits`` is wrapped for the block only."""
    if not breakable(unit) or not hasattr(unit, "logits"):
        yield None
        return
    confusion, original = Confusion(unit.labels), unit.logits

    def logits(batch: dict) -> torch.Tensor:
        out = original(batch)
        confusion.add(*unit.gold_and_predicted(batch, out))
        return out

    unit.logits = logits
    try:
        yield confusion
    finally:
        del unit.logits


class Confusion:
    """The confusion matrix of gold (rows) against predicted (columns) class ids, and what it tells."""

    def __init__(self, labels):
        self.labels = list(labels)
        self.matrix = torch.zeros(len(self.labels), len(self.labels), dtype=torch.long)

    def add(self, gold: torch.Tensor, pred: torch.Tensor) -> None:
        n = len(self.labels)
        self.matrix += torch.bincount(gold.cpu() * n + pred.cpu(), minlength=n * n).view(n, n)

    def summary(self, train_counts: dict[str, int] | None = None) -> dict:
        """Per class precision, recall, F1, support and how often predicted; the matrix; the majority-class
        baseline (the most frequent training label, else the split's)."""
        labels, matrix = self.labels, self.matrix
        total = int(matrix.sum())
        per_class = {}
        for i, name in enumerate(labels):
            hit, predicted, support = int(matrix[i, i]), int(matrix[:, i].sum()), int(matrix[i].sum())
            p = hit / predicted if predicted else 0.0
            r = hit / support if support else 0.0
            per_class[name] = {
                "precision": p,
                "recall": r,
                "f1": 2 * p * r / (p + r) if p + r else 0.0,
                "support": support,
                "predicted": predicted,
            }
        majority = _majority(labels, matrix, train_counts)
        return {
            "labels": labels,
            "per_class": per_class,
            "confusion": matrix.tolist(),
            "predicted_classes": int((matrix.sum(0) > 0).sum()),
            "majority": {
                "label": majority,
                "accuracy": int(matrix[labels.index(majority)].sum()) / max(total, 1),
            },
            "count": total,
        }


def _majority(labels: list[str], matrix: torch.Tensor, train_counts: dict[str, int] | None) -> str:
    """The most frequent training label (the classic baseline predicts it for everything); without training
    counts, the most frequent gold label of the split itself."""
    if train_counts:
        return Counter({k: v for k, v in train_counts.items() if k in labels}).most_common(1)[0][0]
    return labels[int(matrix.sum(1).argmax())]


def one_class_warning(result: dict) -> str | None:
    """A line for a model that predicts one class for every example (it learned no more than the prior)."""
    if result is None or result["predicted_classes"] != 1 or len(result["labels"]) < 2:
        return None
    only = next(name for name, c in result["per_class"].items() if c["predicted"])
    return (
        f"warning: the model predicts '{only}' for every test example (the majority-class baseline scores "
        f"{result['majority']['accuracy']:.4f}): it learned nothing beyond the label prior; try another "
        "learning rate, more steps or more data"
    )


def class_report(result: dict, most: int = 30) -> str:
    """Per-class precision, recall, F1 and support as a text table (sklearn's classification_report's
    layout), the most frequent ``most`` classes, and the confusion matrix for up to 10 classes."""
    per = sorted(result["per_class"].items(), key=lambda kv: -kv[1]["support"])
    width = max(9, *(len(str(name)) for name, _ in per[:most]))
    lines = [f"{'class':<{width}}  precision  recall      f1  support"]
    for name, c in per[:most]:
        scores = f"{c['precision']:9.4f}  {c['recall']:6.4f}  {c['f1']:6.4f}  {c['support']:7,}"
        lines.append(f"{str(name):<{width}}  {scores}")
    if len(per) > most:
        lines.append(f"(the {most} most frequent of {len(per)} classes)")
    labels = result["labels"]
    if len(labels) <= 10:
        cell = max(
            5, *(len(str(x)) for x in labels), *(len(f"{v:,}") for row in result["confusion"] for v in row)
        )
        lines.append("confusion (rows gold, columns predicted):")
        lines.append(" " * width + "  " + " ".join(f"{str(x):>{cell}}" for x in labels))
        for name, row in zip(labels, result["confusion"], strict=True):
            lines.append(f"{str(name):<{width}}  " + " ".join(f"{v:>{cell},}" for v in row))
    return "\n".join(lines)
