"""The page of a search (`warmstart search`): the trials, the expected best validation score against the
number of trials with its spread (Dodge et al. 2019), the default recipe's score as a line, parameter
importances (Optuna's fANOVA) and a slice per parameter, and the best configuration over seeds on test."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from warmstart.report import run_report as R  # noqa: E402
from warmstart.report.html import Page  # noqa: E402
from warmstart.report.plots import integer_ticks, save_png  # noqa: E402
from warmstart.study.expected_max import expected_max  # noqa: E402


def _complete(result: dict) -> list[dict]:
    return [t for t in result["trials"] if t["state"] == "complete"]


def reached(result: dict) -> list[float]:
    """The best validation score each finished trial reached: a complete trial's value, a pruned trial's best
    evaluation before it was stopped (a lower bound of what it would have reached), in trial order."""
    pick = min if result["direction"] == "minimize" else max
    scores = []
    for t in result["trials"]:
        if t["state"] == "complete":
            scores.append(t["value"])
        elif t["state"] == "pruned" and t.get("intermediate"):
            scores.append(pick(t["intermediate"].values()))
    return scores


def _default_validation(result: dict) -> float | None:
    default = result.get("default")
    if not default:
        return None
    return statistics.fmean(s["validation"] for s in default["seeds"].values())


def expected_max_plot(result: dict, out: Path) -> Path:
    """E[best validation score of k trials] for k = 1..n, a band of one standard deviation, the default."""
    lower = result["direction"] == "minimize"
    ks, means, stds = expected_max(reached(result), lower_is_better=lower)
    fig, ax = plt.subplots(figsize=(6.4, 4), dpi=110)
    ax.plot(ks, means, marker="o", markersize=3, label="expected best of k trials")
    ax.fill_between(ks, [m - s for m, s in zip(means, stds)], [m + s for m, s in zip(means, stds)], alpha=0.2,
                    label="± one standard deviation")  # fmt: skip
    default = _default_validation(result)
    if default is not None:
        ax.axhline(
            default, linestyle="--", color="0.35", linewidth=1, label=f"default recipe ({default:.4f})"
        )
    ax.set_xlabel("trials (k)")
    ax.set_ylabel(f"validation {result.get('metric') or 'score'}")
    ax.set_title("expected best validation score by number of trials")
    integer_ticks(ax)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return save_png(fig, R.plot_path(out, "expected_max"), siblings=True)


def slice_plot(result: dict, out: Path) -> Path | None:
    """Each finished trial's validation score against each parameter (log axis for a learning rate)."""
    trials = _complete(result)
    names = sorted({k for t in trials for k in t["params"]})
    if not names:
        return None
    fig, axes = plt.subplots(
        1, len(names), figsize=(3.2 * len(names), 3.4), dpi=110, sharey=True, squeeze=False
    )
    for ax, name in zip(axes[0], names):
        points = [(t["params"][name], t["value"]) for t in trials if name in t["params"]]
        numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for x, _ in points)
        xs = [x if numeric else str(x) for x, _ in points]
        ax.scatter(xs, [y for _, y in points], s=18, alpha=0.8)
        if numeric and "lr" in name.split(".")[-1] and min(x for x, _ in points) > 0:
            ax.set_xscale("log")
        ax.set_xlabel(name)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"validation {result.get('metric') or 'score'}")
    fig.suptitle("validation score by parameter (one point per trial)")
    return save_png(fig, R.plot_path(out, "slices"), siblings=True)


def importances(d: Path, result: dict) -> dict[str, float]:
    """fANOVA importances of the parameters over the finished trials ({} with fewer than 3 or one
    parameter, or when scikit-learn is missing)."""
    import optuna

    from warmstart.study.search_spec import SearchSpec
    from warmstart.study.search_storage import open_study

    if len(_complete(result)) < 3:
        return {}
    study = open_study(SearchSpec(**result["spec"]), d, result["direction"])
    try:
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)
        return dict(optuna.importance.get_param_importances(study, evaluator=evaluator))
    except (ImportError, RuntimeError, ValueError):
        return {}


def _spread(run: dict) -> str:
    tests = [s["test"] for s in run["seeds"].values()]
    mean = statistics.fmean(tests)
    std = statistics.stdev(tests) if len(tests) > 1 else 0.0
    return f"{mean:.4f} ± {std:.4f} (min {min(tests):.4f}, max {max(tests):.4f}; {len(tests)} seeds)"


def search_page(d: Path, out: Path, result: dict) -> Page:
    spec, metric = result["spec"], result.get("metric") or "score"
    trials = result["trials"]
    states = {s: sum(t["state"] == s for t in trials) for s in ("complete", "pruned", "fail")}
    page = Page(f"warmstart search: {Path(spec['init']).name}")
    page.text(
        f"{len(trials)} trials over the space {spec['space']} ({states['complete']} complete, "
        f"{states['pruned']} pruned, {states['fail']} failed and run again), each an ordinary finetune run "
        f"scored by its best validation {metric}"
        + (f", the mean over {spec['repeats']} seeds" if spec["repeats"] > 1 else "")
        + f". Pruner: {spec['pruner']}."
    )
    page.heading("Result")
    rows = [["best trial", f"#{result['best']['number']}", f"{result['best']['validation']:.4f}", "-"]]
    for name in ("final", "default"):
        run = result.get(name)
        if run:
            val = statistics.fmean(s["validation"] for s in run["seeds"].values())
            label = "best configuration" if name == "final" else "default recipe"
            rows.append(
                [
                    label,
                    json.dumps(run["params"]) if run["params"] else "defaults",
                    f"{val:.4f}",
                    _spread(run),
                ]
            )
    page.table(["run", "settings", f"validation {metric}", f"test {metric}"], rows, _verdict(result, metric))
    page.image(expected_max_plot(result, out), "expected best validation score by number of trials")
    page.text(
        "The curve is the expected best validation score of k trials drawn with replacement from these "
        "trials' scores (Dodge et al. 2019, eq. 1: the empirical distribution of the maximum), with its "
        "standard deviation as the band; at k = 1 it is the mean trial, at k = n it nears the best trial. "
        "A pruned trial counts with the best score it reached before it was stopped (a lower bound), so k "
        "counts the trials started, not only the survivors."
    )
    weights = importances(d, result)
    if weights:
        page.table(["parameter", "importance (fANOVA)"], [[k, f"{v:.3f}"] for k, v in weights.items()])
    sliced = slice_plot(result, out)
    if sliced:
        page.image(sliced, "validation score by parameter")
    page.heading("Trials")
    page.table(
        ["trial", "state", "settings", f"validation {metric}", "evaluations", "seconds"],
        [
            [
                f"#{t['number']}" + (f" (retry of #{t['retry_of']})" if t["retry_of"] is not None else ""),
                t["state"],
                json.dumps(t["params"]),
                "-" if t["value"] is None else f"{t['value']:.4f}",
                str(len(t["intermediate"])),
                "-" if t["seconds"] is None else f"{t['seconds']:.0f}",
            ]  # fmt: skip
            for t in trials
        ],
    )
    page.code((d / "search.yaml").read_text(encoding="utf-8"), "search.yaml")
    R.footer(page)
    return page


def _verdict(result: dict, metric: str) -> str:
    final, default = result.get("final"), result.get("default")
    if not final or not default:
        return ""
    f = statistics.fmean(s["test"] for s in final["seeds"].values())
    g = statistics.fmean(s["test"] for s in default["seeds"].values())
    better = (f < g) if result["direction"] == "minimize" else (f > g)
    return (
        f"On test, the best configuration scores {f:.4f} and the default recipe {g:.4f} (mean {metric} over "
        f"seeds): the search {'beats' if better else 'does not beat'} the default by {abs(f - g):.4f}."
    )


def write_search_report(d: Path, result: dict | None = None, out: Path | None = None) -> Path:
    d = Path(d)
    result = result or json.loads((d / "search.json").read_text(encoding="utf-8"))
    out = Path(out) if out else d / "report.html"
    return search_page(d, out, result).write(out)[0]
