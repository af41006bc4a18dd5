"""Learning-rate schedules as multipliers of the peak rate: warmup, then linear / cosine decay, constant, or
warmup-stable-decay (``wsd``, MiniCPM's WSD, a trapezoid: the peak held, then a linear decay over the last
``decay_ratio`` of the steps after warmup; most of a short run at the peak rate)."""

import math

from warmstart.errors import WarmstartError


def _linear(progress: float, floor: float, decay_ratio: float) -> float:
    return floor + (1 - floor) * max(0.0, 1 - progress)


def _cosine(progress: float, floor: float, decay_ratio: float) -> float:
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def _constant(progress: float, floor: float, decay_ratio: float) -> float:
    return 1.0


def _wsd(progress: float, floor: float, decay_ratio: float) -> float:
    """The linear decay squeezed into the last ``decay_ratio`` of the progress; 1.0 before it."""
    return _linear(max(0.0, progress - (1 - decay_ratio)) / decay_ratio, floor, decay_ratio)


SCHEDULES = {"linear": _linear, "cosine": _cosine, "constant": _constant, "wsd": _wsd}


def lr_multiplier(name: str, warmup: int, total: int, min_ratio: float = 0.0, decay_ratio: float = 0.2):
    """step -> multiplier; ``linear`` with warmup is BERT's triangular schedule. Only ``wsd`` reads
    ``decay_ratio``."""
    if name not in SCHEDULES:
        raise WarmstartError(f"unknown schedule '{name}'", f"choose one of: {', '.join(SCHEDULES)}")
    if name == "wsd" and not 0 < decay_ratio <= 1:
        raise WarmstartError(f"train.decay_ratio is {decay_ratio}", "set it in (0, 1], e.g. 0.2")
    decay = SCHEDULES[name]

    def f(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        return decay((step - warmup) / max(1, total - warmup), min_ratio, decay_ratio)

    return f
