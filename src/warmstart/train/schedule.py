"""Learning-rate schedules as multipliers of the peak rate: warmup, then linear / cosine decay or constant."""

import math

from warmstart.errors import WarmstartError


def _linear(progress: float, floor: float) -> float:
    return floor + (1 - floor) * max(0.0, 1 - progress)


def _cosine(progress: float, floor: float) -> float:
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def _constant(progress: float, floor: float) -> float:
    return 1.0


SCHEDULES = {"linear": _linear, "cosine": _cosine, "constant": _constant}


def lr_multiplier(name: str, warmup: int, total: int, min_ratio: float = 0.0):
    """step -> multiplier; ``linear`` with warmup is BERT's triangular schedule."""
    if name not in SCHEDULES:
        raise WarmstartError(f"unknown schedule '{name}'", f"choose one of: {', '.join(SCHEDULES)}")
    decay = SCHEDULES[name]

    def f(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        return decay((step - warmup) / max(1, total - warmup), min_ratio)

    return f
