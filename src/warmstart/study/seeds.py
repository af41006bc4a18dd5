"""RUN/summary.json of a finetune over several seeds: each test metric's spread, and the failed runs.

A run failed when its best validation score is no better than always answering the majority class (or,
for tagging, the most frequent tag): the definition of Mosbach et al. 2021 and Dodge et al. 2020 for BERT's
unstable finetuning. It needs accuracy as the validation metric; for other metrics no failures are counted.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path

from warmstart.atomic import write_atomic

TOLERANCE = 1e-9  # a score equal to the majority share, up to float rounding, counts as failed


def majority_share(records: list[dict]) -> float | None:
    """The share of the most common label (single-label records) or tag (tagged records); None otherwise."""
    if records and all("tags" in r for r in records):
        counts = Counter(t for r in records for t in r["tags"])
    elif records and all(isinstance(r.get("label"), str) for r in records):
        counts = Counter(r["label"] for r in records)
    else:
        return None
    total = sum(counts.values())
    return max(counts.values()) / total if total else None


def failed_seeds(runs: dict[int, dict], majority: float | None) -> list[int] | None:
    """Seeds whose best validation accuracy is at or below ``majority``; None when it cannot be said."""
    if majority is None or any(r.get("metric") != "accuracy" for r in runs.values()):
        return None
    return [s for s in sorted(runs) if runs[s]["best_validation"] <= majority + TOLERANCE]


def spread(values: list[float]) -> dict:
    return {
        "values": values,
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def summarize_seeds(root: Path, runs: dict[int, dict], majority: float | None = None) -> dict:
    """Mean, median, standard deviation, min and max of every test metric over the seeds (``runs`` maps a
    seed to its test_metrics.json), and the failed runs; writes summary.json and summary.md."""
    seeds = sorted(runs)
    names = [k for k in runs[seeds[0]]["test"] if k != "loss"]
    summary = {"seeds": seeds, "metrics": {n: spread([runs[s]["test"][n] for s in seeds]) for n in names}}
    failed = failed_seeds(runs, majority)
    if failed is not None:
        summary["failed"] = {"seeds": failed, "count": len(failed), "majority_validation": majority}
    text = _markdown(summary)
    write_atomic(Path(root) / "summary.json", lambda fh: fh.write(_json(summary)), text=True)
    write_atomic(Path(root) / "summary.md", lambda fh: fh.write(text), text=True)
    return summary


def _json(summary: dict) -> str:
    return json.dumps(summary, indent=2)


def _markdown(summary: dict) -> str:
    lines = ["| metric | mean | median | std | min | max |", "|---|---|---|---|---|---|"]
    for name, m in summary["metrics"].items():
        cells = " | ".join(f"{m[k]:.4f}" for k in ("mean", "median", "std", "min", "max"))
        lines.append(f"| {name} | {cells} |")
    text = f"seeds {summary['seeds']}\n\n" + "\n".join(lines) + "\n"
    if "failed" in summary:
        f = summary["failed"]
        text += (
            f"\nfailed runs (best validation accuracy at or below the majority class, "
            f"{f['majority_validation']:.4f}): {f['count']} of {len(summary['seeds'])}"
            + (f" (seeds {', '.join(map(str, f['seeds']))})" if f["seeds"] else "")
            + "\n"
        )
    return text
