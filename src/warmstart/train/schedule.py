"""Learning-rate schedules as multipliers of the peak rate: warmup, then linear / cosine decay, constant, or
warmup-stable-decay (``wsd``, MiniCPM's WSD, a trapezoid: the peak held, then a linear decay over the last
``decay_ratio`` of the steps after warmup; most of a short run at the peak rate)."""

import math

from warmstart.errors import WarmstartError


def _linear(progress: float, floor: float) -> float:
    return floor + (1 - floor) * max(0.0, 1 - progress)


def _cosine(progress: float, floor: float) -> float:
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def _constant(progress: float, floor: float) -> float:
    return 1.0


def _wsd(decay_ratio: float):
    def f(progress: float, floor: float) -> float:
        stable = 1 - decay_ratio
        return _linear((progress - stable) / decay_ratio, floor) if progress > stable else 1.0

    return f


SCHEDULES = {"linear": _linear, "cosine": _cosine, "constant": _constant, "wsd": _wsd}


def lr_multiplier(name: str, warmup: int, total: int, min_ratio: float = 0.0, decay_ratio: float = 0.2):
    """step -> multiplier; ``linear`` with warmup is BERT's triangular schedule."""
    if name not in SCHEDULES:
        raise WarmstartError(f"unknown schedule '{name}'", f"choose one of: {', '.join(SCHEDULES)}")
    if name == "wsd" and not 0 < decay_ratio <= 1:
        raise WarmstartError(f"train.decay_ratio is {decay_ratio}", "set it in (0, 1], e.g. 0.2")
    decay = _wsd(decay_ratio) if name == "wsd" else SCHEDULES[name]

    def f(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        return decay((step - warmup) / max(1, total - warmup), min_ratio)

    return f
