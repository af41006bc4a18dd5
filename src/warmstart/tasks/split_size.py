"""A validation or test split too small to trust: one line before finetuning says so, with the counts and
what to give instead. The best checkpoint is chosen on the validation split and the metrics reported come
from the test split; with a handful of examples both are mostly noise (one example more or less moves an
accuracy by several points), which a user with a small file should hear before reading them."""

from __future__ import annotations

FEW = 20  # examples: below this one example moves a split's accuracy by more than 5 points


def few_examples_line(records: dict[str, list]) -> str | None:
    """The warning for the ``validation`` / ``test`` splits of ``records`` holding fewer than ``FEW``
    examples, or None."""
    small = {s: len(records[s]) for s in ("validation", "test") if s in records and len(records[s]) < FEW}
    if not small:
        return None
    said = " and ".join(f"{s} holds {n:,} example{'s' * (n != 1)}" for s, n in small.items())
    flags = " / ".join(f"--{s}-file FILE" for s in small)
    return (
        f"warning: {said}: the best checkpoint and the test metrics rest on so few that one example moves "
        f"them by {100 / min(small.values()):.0f} points; give {flags}, or more rows to carve them from"
    )
