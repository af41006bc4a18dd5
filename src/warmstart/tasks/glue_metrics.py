"""GLUE's official metrics: Matthews correlation (CoLA), F1 of the positive class "1" and accuracy (MRPC,
QQP), Pearson and Spearman correlation (STS-B), accuracy for the rest (MNLI: matched and mismatched).

A task's score is the mean of its metrics (MNLI: of matched and mismatched accuracy), and the suite's
average the mean of the task scores, as the GLUE leaderboard computes it.
"""

from __future__ import annotations

import math

import numpy as np

METRICS = {  # task -> its official metrics, in the order the table shows them
    "cola": ("mcc",),
    "sst2": ("accuracy",),
    "mrpc": ("f1", "accuracy"),
    "stsb": ("pearson", "spearman"),
    "qqp": ("f1", "accuracy"),
    "mnli": ("accuracy",),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
    "wnli": ("accuracy",),
}
POSITIVE = "1"  # MRPC's and QQP's paraphrase / duplicate class


def accuracy(gold: list, predicted: list) -> float:
    return float(np.mean([g == p for g, p in zip(gold, predicted, strict=True)])) if gold else 0.0


def mcc(gold: list, predicted: list) -> float:
    """Matthews correlation coefficient over any number of classes (Gorodkin's R_K); 0 when undefined."""
    classes = sorted(set(gold) | set(predicted))
    index = {c: i for i, c in enumerate(classes)}
    confusion = np.zeros((len(classes), len(classes)))
    for g, p in zip(gold, predicted, strict=True):
        confusion[index[g], index[p]] += 1
    t, p, c, s = confusion.sum(1), confusion.sum(0), np.trace(confusion), confusion.sum()
    denominator = math.sqrt(s * s - float(p @ p)) * math.sqrt(s * s - float(t @ t))
    return float((c * s - float(t @ p)) / denominator) if denominator else 0.0


def f1(gold: list, predicted: list, positive: str = POSITIVE) -> float:
    tp = sum(g == positive and p == positive for g, p in zip(gold, predicted, strict=True))
    fp = sum(g != positive and p == positive for g, p in zip(gold, predicted, strict=True))
    fn = sum(g == positive and p != positive for g, p in zip(gold, predicted, strict=True))
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def pearson(x: list[float], y: list[float]) -> float:
    a, b = np.asarray(x, float) - np.mean(x), np.asarray(y, float) - np.mean(y)
    denominator = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / denominator if denominator else 0.0


def ranks(values: list[float]) -> np.ndarray:
    """1-based ranks, ties given their mean rank."""
    values = np.asarray(values, float)
    order = np.argsort(values, kind="stable")
    out = np.empty(len(values))
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        out[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: list[float], y: list[float]) -> float:
    return pearson(list(ranks(x)), list(ranks(y)))


FUNCTIONS = {"mcc": mcc, "accuracy": accuracy, "f1": f1, "pearson": pearson, "spearman": spearman}


def score(task: str, gold: list, predicted: list) -> dict[str, float]:
    """{metric: value} of ``task``'s official metrics."""
    return {m: FUNCTIONS[m](gold, predicted) for m in METRICS[task]}


def task_score(metrics: dict[str, dict[str, float]]) -> float:
    """The mean of a task's metrics over its dev sets ({dev: {metric: value}})."""
    values = [v for by_metric in metrics.values() for v in by_metric.values()]
    return sum(values) / len(values)
