"""Seeded, nested, stratified subsets of a training split (data-efficiency studies).

``nested_subset(rows, fraction, seed)`` keeps ``ceil(fraction * n_c)`` rows of every label ``c`` (at least
one, so that no class goes missing), chosen by one seeded shuffle per label: for the same seed a smaller
fraction is always inside a larger one, and fraction 1 keeps every row. Rows keep their original order.
"""

from __future__ import annotations

import math
import random

from warmstart.errors import WarmstartError


def check_fraction(fraction: float, key: str = "fraction") -> float:
    if not isinstance(fraction, int | float) or not 0 < fraction <= 1:
        raise WarmstartError(f"{key} must be in (0, 1], got {fraction!r}", f"e.g. {key}=0.1 for 10%")
    return float(fraction)


def nested_subset(rows: list[dict], fraction: float, seed: int) -> list[dict]:
    """The rows of a ``fraction`` subset (see the module doc); all of them when ``fraction`` is 1."""
    check_fraction(fraction)
    if fraction == 1:
        return list(rows)
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(str(row.get("label")), []).append(i)
    keep: list[int] = []
    for label in sorted(groups):
        members = groups[label]
        random.Random(f"{seed}:{label}").shuffle(members)
        keep += members[: max(1, math.ceil(fraction * len(members)))]
    return [rows[i] for i in sorted(keep)]
