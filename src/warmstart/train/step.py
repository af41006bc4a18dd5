"""One optimizer step's gradient: the gradient of the mean loss over everything the step counts, however the
step is split into micro-batches (gradient accumulation) and processes (torchrun).

A unit's loss is a mean over what its batch counts (masked tokens for masked LM, rows for classification,
words for tagging), reported as ``stats["loss"] = (sum, count)``. Micro-batches and processes hold different
counts (one check: 76/71/81/67 masked tokens in four micro-batches of 8), so averaging their means weighs a
token by the size of the micro-batch it fell in: 4 x 8 was 4.3% away from one batch of 32. Here:

- a unit whose loss is one mean backpropagates ``mean x count`` (the micro-batch's sum); once every
  micro-batch is in, the gradients are scaled by ``processes / the count over the step and all processes``;
- a unit whose loss adds means over different counts (BERT's MLM + NSP, ALBERT's MLM + SOP, ELECTRA's MLM +
  replaced-token detection) says what each term counts with ``counts(batch) -> {term: count}``; the counts
  of all micro-batches and processes are added up before the forward passes and the unit divides each
  term's sum by its global count (``forward(batch, norms=...)``).

DDP and FSDP average the processes' gradients, hence the factor ``processes``. Either way the result is the
gradient of one batch holding every micro-batch of every process, within float rounding. A process's
stand-in row (it has no rows of a micro-batch) weighs zero.

A unit's training stats named ``PART/KEY`` (multitask: each member's ``NAME/loss``) are parts of the loss
reported beside it: ``step_gradients`` adds their (sum, count) into ``parts``, which the fit loop logs as
means over its log window. A unit reports the same such keys for every batch (processes add them up).
"""

from __future__ import annotations

import contextlib

from warmstart.train import distributed as ddp


def count_of(stats: dict) -> float:
    """What the micro-batch's mean loss is a mean over (1 for a unit that does not say)."""
    return float(stats["loss"][1]) if "loss" in stats else 1.0


def tokens_of(batch: dict) -> int:
    mask = batch.get("attention_mask")
    return int(mask.sum()) if mask is not None else batch["input_ids"].numel()


def global_counts(unit, batches: list[dict], counted: list[bool]) -> dict[str, float]:
    """Each term's count over the step's micro-batches and all processes (every process sums the same keys:
    a stand-in's counts are taken as zeros)."""
    local: dict[str, float] = {}
    for batch, mine in zip(batches, counted):
        for key, value in unit.counts(batch).items():
            local[key] = local.get(key, 0.0) + (float(value) if mine else 0.0)
    keys = sorted(local)
    values = ddp.sum_all([local[k] for k in keys]) if ddp.active() else [local[k] for k in keys]
    return dict(zip(keys, values))


def add_parts(parts: dict, stats: dict, mine: bool = True) -> None:
    """Adds the ``PART/KEY`` stats of one micro-batch into ``parts`` ({key: [sum, count]}); a stand-in
    micro-batch (``mine`` false) adds its keys with zeros, so every process holds the same keys."""
    for key, (total, n) in stats.items():
        if "/" in key:
            acc = parts.setdefault(key, [0.0, 0.0])
            acc[0] += float(total) if mine else 0.0
            acc[1] += float(n) if mine else 0.0


def step_gradients(
    model,
    unit,
    batches: list[dict],
    counted: list[bool],
    autocast=contextlib.nullcontext,
    parts=None,
    scale=None,
):
    """Backpropagate one step's micro-batches through ``model`` (``unit``, or its DDP/FSDP wrapper); returns
    (the step's mean loss over every micro-batch and process, their tokens). ``parts`` (a dict) gathers the
    micro-batches' ``PART/KEY`` stats (this process's; see the module docstring). ``scale`` (fp16's loss
    scaler: train/precision.py) multiplies each backpropagated loss; the gradients are left scaled by it,
    the returned loss is not."""
    norms = global_counts(unit, batches, counted) if hasattr(unit, "counts") else None
    count = total = 0.0
    tokens = 0
    for a, (batch, mine) in enumerate(zip(batches, counted)):
        with ddp.accumulating(model, last=a == len(batches) - 1):
            with autocast():
                loss, stats = model(batch) if norms is None else model(batch, norms=norms)
            weight = (1.0 if norms is not None else count_of(stats)) if mine else 0.0
            if parts is not None:
                add_parts(parts, stats, mine)
            weighted = loss * (weight * ddp.world() if norms is not None else weight)
            (weighted if scale is None else scale(weighted)).backward()
        count += weight
        total += float(loss.detach()) * weight
        tokens += tokens_of(batch) if mine else 0
    if ddp.active():
        count, total, tokens = ddp.sum_all([count, total, tokens])
    if norms is not None:  # each micro-batch's loss is its share of the global mean already
        return total, int(tokens)
    scale = ddp.world() / count if count else 0.0
    for p in unit.parameters():
        if p.grad is not None:
            p.grad.mul_(scale)
    return (total / count if count else 0.0), int(tokens)
