"""The page of a stability study (`warmstart study --stability`): each arm's test scores over the seeds as a
distribution, the failed runs, and what the arms change (Mosbach et al. 2021; Zhang et al. 2021)."""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.report import run_report as R  # noqa: E402
from warmstart.report.html import Page  # noqa: E402
from warmstart.report.plots import save_png  # noqa: E402
from warmstart.study.arms import stability_arms  # noqa: E402


def _arms(study: dict) -> list:
    spec = study["config"]
    return stability_arms(spec["epochs"], spec["long_epochs"], spec["reinit"])


def _scores(study: dict, arm: str, metric: str) -> list[float]:
    return [c["test"][metric] for c in sorted(study["cells"], key=lambda c: c["seed"]) if c["model"] == arm]


def distribution_plot(study: dict, out: Path) -> Path:
    """A box per arm with every seed's test score as a point; the validation majority share dashed."""
    metric, arms = study["metric"], _arms(study)
    fig, ax = plt.subplots(figsize=(8, 4.6), dpi=110)
    data = [_scores(study, a.name, metric) for a in arms]
    ax.boxplot(data, widths=0.5, showfliers=False, medianprops={"color": "black"})
    for i, values in enumerate(data, start=1):
        offsets = [(k - (len(values) - 1) / 2) * 0.06 for k in range(len(values))]
        ax.scatter([i + o for o in offsets], values, s=18, zorder=3, alpha=0.8)
    majority = study["dataset"].get("validation_majority")
    if majority is not None:
        label = f"majority class ({majority:.3f})"
        ax.axhline(majority, linestyle="--", color="0.4", linewidth=1, label=label)
        ax.legend(loc="lower right", fontsize=8)
    ax.set_xticks(range(1, len(arms) + 1))
    ax.set_xticklabels([a.label.replace(", ", "\n") for a in arms], fontsize=7)
    ax.set_ylabel(f"test {metric}")
    n = len(study["seeds"])
    ax.set_title(f"finetuning stability over {n} seed{'' if n == 1 else 's'} per arm")
    ax.grid(axis="y", alpha=0.3)
    return save_png(fig, R.plot_path(out, "stability"), siblings=True)


def _rows(study: dict) -> list[dict]:
    by_model = {r["model"]: r for r in study["table"]}
    return [{"arm": a, **by_model[a.name]} for a in _arms(study) if a.name in by_model]


def _verdict(study: dict) -> str:
    metric, rows = study["metric"], _rows(study)
    if not rows:
        return ""
    widest = max(rows, key=lambda r: r[metric]["std"])
    narrowest = min(rows, key=lambda r: r[metric]["std"])
    best = max(rows, key=lambda r: r[metric]["mean"])
    failed = sum(r.get("failed", 0) for r in rows)
    runs = sum(len(r["seeds"]) for r in rows)

    def pooled(pick) -> float:
        return statistics.fmean(v for r in rows if pick(r["arm"]) for v in r[metric]["values"])

    bertadam = pooled(lambda a: "train.adam_bias_correction=false" in a.overrides)
    adamw = pooled(lambda a: "train.adam_bias_correction=true" in a.overrides)
    return (
        f"Widest spread: {widest['arm'].label} (std {widest[metric]['std']:.4f}); narrowest: "
        f"{narrowest['arm'].label} (std {narrowest[metric]['std']:.4f}); best mean: {best['arm'].label} "
        f"({best[metric]['mean']:.4f}). Failed runs: {failed} of {runs}. Mean test {metric} over every "
        f"seed and arm: AdamW {adamw:.4f}, BERTAdam {bertadam:.4f}."
    )


def stability_page(d: Path, out: Path, study: dict) -> Page:
    spec, ds, metric = study["config"], study["dataset"], study["metric"]
    n = ds["sizes"]["train"]
    page = Page(f"warmstart stability study on {ds['name']}")
    page.text(
        f"The pretrained model {spec['run']} finetuned on {n:,} training examples of {ds['name']} in 8 arms: "
        f"Adam with bias correction (AdamW) or without (BERTAdam, BERT's original optimizer), "
        f"{spec['epochs']:g} or {spec['long_epochs']:g} epochs, and the top {spec['reinit']} layers kept or "
        f"re-initialised, each over seeds {', '.join(map(str, study['seeds']))}. A run failed when its best "
        "validation accuracy is at or below the majority class's share (Mosbach et al. 2021). Their finding: "
        "the instability is an optimisation problem of too few steps and Adam without bias correction; "
        "longer training with bias correction removes most failed runs (Zhang et al. 2021 add "
        "re-initialising the top layers). The figures below are this run's, whatever they show."
    )
    page.heading("Result")
    rows = [
        [
            r["arm"].label,
            *(f"{r[metric][k]:.4f}" for k in ("mean", "std", "min", "max")),
            f"{r['failed']} of {len(r['seeds'])}" if "failed" in r else "-",
        ]
        for r in _rows(study)
    ]
    page.table(["arm", f"mean {metric}", "std", "min", "max", "failed runs"], rows, _verdict(study))
    page.image(distribution_plot(study, out), f"test {metric} per arm")
    page.heading("Data and method")
    page.text(
        f"Dataset {ds['name']} ({ds.get('source', '')}), sizes "
        + ", ".join(f"{s} {k:,}" for s, k in ds["sizes"].items())
        + ". Every arm sees the same training examples and seeds; test scores use the best validation "
        "checkpoint."
    )
    page.code((d / "study.yaml").read_text(encoding="utf-8"), "study.yaml")
    R.footer(page)
    return page
