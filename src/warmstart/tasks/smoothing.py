"""task.label_smoothing: the training loss's label smoothing (transformers' ``label_smoothing_factor``) on the
units whose loss is a single-label cross-entropy: classification and tagging. Validation and test report
the plain cross-entropy, so a run's scores compare with one trained without it."""

from __future__ import annotations

from warmstart.errors import WarmstartError


def smoothed(unit, smoothing: float) -> None:
    """Set ``smoothing`` on ``unit`` (nothing for 0); a unit whose loss does not take it is refused."""
    if not smoothing:
        return
    single = getattr(unit, "problem", "single_label") == "single_label"
    if not hasattr(type(unit), "label_smoothing") or not single:
        raise WarmstartError(
            f"task.label_smoothing={smoothing} applies to single-label classification and tagging only",
            "leave task.label_smoothing at 0 for this task",
        )
    unit.label_smoothing = smoothing
