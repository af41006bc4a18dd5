"""The closing lines of `warmstart finetune` and `warmstart pretrain`: where the run's results are, and the
commands that go on from them (the curves, the report page, the export for the hub).

Read from the run directory as it was left, so every line names something that is there: the best
checkpoint (with its step and validation metric, from best.json), test_metrics.json, metrics.jsonl, tb/,
and for a run of several seeds RUN/summary.json and the seed whose best checkpoint scored best on
validation (RUN/seed-N), which `warmstart export` needs: it exports one seed's model, not the run of several.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from warmstart.train.best_metric import LOWER_IS_BETTER

WIDTH = 14  # the label column


def _best(d: Path) -> str | None:
    """``d/best (step N, validation METRIC V)``, or None without a best checkpoint."""
    if not (d / "best").is_dir():
        return None
    try:
        info = json.loads((d / "best" / "best.json").read_text(encoding="utf-8"))
        return f"{d / 'best'} (step {info['step']}, validation {info['metric']} {float(info['value']):.4f})"
    except (OSError, ValueError, KeyError, TypeError):
        return str(d / "best")


def _seed_runs(run: Path) -> list[Path]:
    """RUN/seed-N of a run of several seeds, by seed; [] for a run of one."""
    found = [p for p in run.glob("seed-*") if p.is_dir() and p.name.removeprefix("seed-").isdigit()]
    return sorted(found, key=lambda p: int(p.name.removeprefix("seed-")))


def _best_seed(seeds: list[Path]) -> Path:
    """The seed run whose best validation score is the best (test_metrics.json ``best_validation`` of its
    ``metric``; lower is better for a loss, a perplexity or an error); the first seed when none says."""
    scored = []
    for d in seeds:
        try:
            m = json.loads((d / "test_metrics.json").read_text(encoding="utf-8"))
            value, name = float(m["best_validation"]), str(m.get("metric", ""))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        lower = any(word in name.lower() for word in LOWER_IS_BETTER)
        scored.append((value if lower else -value, seeds.index(d), d))
    return min(scored)[2] if scored else seeds[0]


def finished_lines(run_dir: str | Path, command: str = "finetune") -> list[str]:
    """The lines that close a finished ``command`` (finetune or pretrain) run in ``run_dir``."""
    run = Path(run_dir)
    seeds = _seed_runs(run) if command == "finetune" else []
    one = _best_seed(seeds) if seeds else run  # the seed whose files are named
    q = shlex.quote
    rows = [("run", str(run))]
    if seeds and (run / "summary.json").is_file():
        rows.append(("summary", f"{run / 'summary.json'} ({len(seeds)} seeds)"))
    best = _best(one)
    if best:
        shown = f"; the best of {len(seeds)} seeds on validation, each seed's: {run}/seed-*/best"
        rows.append(("best model", best + (shown if seeds else "")))
    if command == "pretrain" and (run / "final").is_dir():
        rows.append(("final model", f"{run / 'final'} (what finetune --init {q(str(run))} starts from)"))
    for label, name in (("test metrics", "test_metrics.json"), ("metrics log", "metrics.jsonl")):
        if (one / name).is_file():
            rows.append((label, str(one / name)))
    report = f"warmstart report {q(str(run))}  (writes {run / 'report.html'})"
    logs = run if seeds else run / "tb"
    curves = f"tensorboard --logdir {q(str(logs))}   |   {report}" if (one / "tb").is_dir() else report
    rows.append(("curves", curves))
    out = f"{one.parent.name}-{one.name}-hf" if seeds else f"{run.name}-hf"
    rows.append(("share", f"warmstart export {q(str(one))} --out {q(str(run.parent / out))}"))
    if command == "pretrain":
        rows.append(("finetune", f"warmstart finetune --init {q(str(run))} --dataset DATA --out RUN"))
    return [f"{label:<{WIDTH}}{text}" for label, text in rows]
