"""Which validation metric picks RUN/best and drives early stopping, and which way is better.

``train.metric_for_best_model`` names any metric the validation reports (accuracy, f1, macro_f1, loss,
exact_match...); unset, the unit's own ``best_metric`` (a task's headline metric, a pretraining objective's
loss). ``train.greater_is_better`` says the direction; unset, it is the unit's own for its own metric and
otherwise read from the name: lower is better for a loss, a perplexity or an error rate, higher for the
rest (as transformers' Trainer infers it). A chosen name the validation never reports is one clear line at
the first evaluation, naming the metrics it does report.
"""

from __future__ import annotations

from warmstart.errors import WarmstartError

LOWER_IS_BETTER = ("loss", "perplexity", "error")


def chosen_metric(unit, cfg) -> tuple[str, str]:
    """(metric name, "max" or "min") of a unit under a TrainConfig."""
    own_name, own_mode = getattr(unit, "best_metric", ("loss", "min"))
    name = cfg.metric_for_best_model or own_name
    if cfg.greater_is_better is not None:
        return name, "max" if cfg.greater_is_better else "min"
    if name == own_name:
        return name, own_mode
    return name, "min" if any(word in name.lower() for word in LOWER_IS_BETTER) else "max"


def check_reported(name: str, metrics: dict) -> None:
    """Refuse a chosen metric that an evaluation (``metrics``, not empty) does not report."""
    if not metrics or name in metrics:
        return
    reported = sorted(k for k, v in metrics.items() if isinstance(v, int | float))
    raise WarmstartError(
        f"train.metric_for_best_model={name} is not a metric this run's validation reports "
        f"(it reports {', '.join(reported)})",
        f"use one of those, e.g. train.metric_for_best_model={reported[0] if reported else 'loss'}",
    )
