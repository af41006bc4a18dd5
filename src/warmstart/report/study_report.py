"""The page of a study: accuracy vs label fraction, convergence at the largest fraction, the final table,
the pretraining curves of the run studied, and where the data and configs came from."""

from __future__ import annotations

import statistics
from pathlib import Path

from warmstart.report import run_report as R
from warmstart.report.band_plot import band_plot
from warmstart.report.html import Page
from warmstart.report.stability_report import stability_page
from warmstart.study.baseline import C_GRID, sklearn_version
from warmstart.study.cells import MAX_EVALS
from warmstart.study.summary import read_study

NAMES = {
    "pretrained": "pretrained",
    "scratch": "scratch twin",
    "tfidf": "TF-IDF + logistic regression",
    "frequent_tag": "most frequent tag per word",
}
METHODS = {
    "tfidf": "TF-IDF: word uni- and bigrams, sublinear tf, logistic regression with C picked on validation "
    "from {grid} (scikit-learn {sklearn}).",
    "frequent_tag": "Most frequent tag: each word form takes the tag it had most often in the subset, an "
    "unseen form that of its lower-cased form, an unseen word the most frequent tag overall; nothing is "
    "tuned on validation.",
}


def baseline(study: dict) -> str:
    """The study's baseline model (the last of its models: tfidf or frequent_tag)."""
    return study["models"][-1]


def percent(f: float) -> str:
    return f"{100 * f:g}%"


def _row(study: dict, model: str, fraction: float) -> dict | None:
    return next((r for r in study["table"] if r["model"] == model and r["fraction"] == fraction), None)


def fraction_plot(study: dict, out: Path) -> Path:
    metric, series = study["metric"], {}
    for model in study["models"]:
        rows = [r for r in study["table"] if r["model"] == model]
        m = [r[metric] for r in rows]
        series[NAMES[model]] = (
            [r["fraction"] for r in rows],
            *[[x[k] for x in m] for k in ("median", "min", "max")],
        )
    ticks = [(f, percent(f)) for f in study["fractions"]]
    title = f"test {metric} vs labels used (median, min-max over {_seeds(study)})"
    return band_plot(
        series,
        title,
        "fraction of the training labels (log scale)",
        metric,
        R.plot_path(out, "fractions"),
        logx=True,
        xticks=ticks,
        dashed=(NAMES[baseline(study)],),
    )


def median_curves(cells: list[dict], metric: str) -> tuple[list, list, list, list]:
    """Per validation step: (steps, median, min, max) over the seeds that evaluated at that step."""
    by_step: dict[int, list[float]] = {}
    for c in cells:
        for r in c.get("validation_curve", []):
            if metric in r:
                by_step.setdefault(r["step"], []).append(r[metric])
    steps = sorted(by_step)
    return (steps, *[[f(by_step[s]) for s in steps] for f in (statistics.median, min, max)])


def convergence(study: dict, out: Path) -> tuple[Path, str]:
    metric, fraction = study["metric"], max(study["fractions"])
    curves = {}
    for model in ("pretrained", "scratch"):
        mine = [c for c in study["cells"] if c["model"] == model and c["fraction"] == fraction]
        curves[model] = median_curves(mine, metric)
    base = baseline(study)
    scores = [
        c["best_validation"] for c in study["cells"] if c["model"] == base and c["fraction"] == fraction
    ]
    levels = {f"{NAMES[base]} (median)": statistics.median(scores)} if scores else {}
    title = f"validation {metric} while finetuning on {percent(fraction)} of the labels"
    path = band_plot(
        {NAMES[m]: c for m, c in curves.items()},
        title,
        "finetuning step",
        f"validation {metric}",
        R.plot_path(out, "convergence"),
        levels=levels,
        integer_x=True,
        mark_best=True,
    )
    match = steps_to_reach(curves["scratch"], curves["pretrained"])
    if match is None:
        return path, ""
    target, best_scratch, reached = match
    by = "by the pretrained model"
    when = f"reached {by} at step {reached:,}" if reached is not None else f"never reached {by}"
    note = (
        f"The scratch twin's best median validation {metric} ({target:.4f}, at step {best_scratch:,}) is "
        f"{when} (step 0, before training, counts for neither)."
    )
    return path, note


def steps_to_reach(twin: tuple, pretrained: tuple) -> tuple[float, int, int | None] | None:
    """From two ``median_curves``: the twin's best median over its trained steps, its first step there, and
    the first trained step at which the pretrained model's median reaches it (None: never). Step 0 is the
    evaluation before any training, credited to neither model. None when a curve has no trained step."""
    twin_steps = [(s, v) for s, v in zip(twin[0], twin[1]) if s > 0]
    pre_steps = [(s, v) for s, v in zip(pretrained[0], pretrained[1]) if s > 0]
    if not twin_steps or not pre_steps:
        return None
    step, best = max(twin_steps, key=lambda sv: (sv[1], -sv[0]))
    return best, step, next((s for s, v in pre_steps if v >= best), None)


def _cell(row: dict | None, metric: str) -> str:
    if row is None:
        return "-"
    m = row[metric]
    return f"{m['median']:.4f} ({m['min']:.4f}-{m['max']:.4f})"


def study_page(d: Path, out: Path) -> Page:
    study = read_study(d)
    if study["config"].get("stability"):
        return stability_page(d, out, study)
    spec, ds, metric = study["config"], study["dataset"], study["metric"]
    page = Page(f"warmstart study: what pretraining bought on {ds['name']}")
    page.text(
        f"Pretrained model ({spec['run']}) vs its scratch twin (same architecture, tokenizer, data order and "
        f"seeds; random weights) vs {NAMES[baseline(study)]}, on "
        f"{', '.join(percent(f) for f in study['fractions'])} of the {ds['sizes']['train']:,} training "
        f"{'sentences' if ds.get('kind') == 'tagging' else 'labels'}, {_seeds(study)}. Test {metric} is "
        "measured once per cell, with the weights of the best validation evaluation (TF-IDF: the C best on "
        "validation)."
    )
    page.heading("Result")
    page.table(
        ["labels", "train examples", *[f"{NAMES[m]}: median (min-max)" for m in study["models"]]],
        [
            [percent(f), _examples(study, f), *[_cell(_row(study, m, f), metric) for m in study["models"]]]
            for f in study["fractions"]
        ],
        _verdict(study, metric),
    )
    page.image(fraction_plot(study, out), f"test {metric} vs label fraction")
    path, note = convergence(study, out)
    page.image(path, f"validation {metric} vs finetuning step")
    if note:
        page.text(note)
    page.heading("Final table")
    names = [k for k, v in study["table"][0].items() if isinstance(v, dict) and "median" in v]  # metrics
    header = ["model", "fraction", "train examples"]
    for n in names:
        header += [f"median {n}", f"min {n}", f"max {n}"]
    rows = []
    for r in study["table"]:
        row = [r["model"], f"{r['fraction']:g}", r["train_examples"]]
        for n in names:
            row += [f"{r[n][k]:.4f}" for k in ("median", "min", "max")]
        rows.append(row)
    page.table(header, rows, f"Over {_seeds(study)}; every cell is in study.json.")
    run = Path(spec["run"])
    if run.is_dir():
        R.pretraining_section(page, run, out, R.run_config(run))
    _provenance(page, d, study, run)
    R.footer(page)
    return page


def _seeds(study: dict) -> str:
    full = study["config"].get("full_seeds")
    seeds = f"seeds {', '.join(map(str, study['seeds']))}"
    return seeds + (f" (at 100%: {', '.join(map(str, full))})" if full and 1.0 in study["fractions"] else "")


def _examples(study: dict, fraction: float) -> str:
    row = next((r for r in study["table"] if r["fraction"] == fraction), None)
    return f"{row['train_examples']:,}" if row else "-"


def _verdict(study: dict, metric: str) -> str:
    parts = []
    for f in study["fractions"]:
        pre, scr, tf = (_row(study, m, f) for m in ("pretrained", "scratch", baseline(study)))
        if pre and scr and tf:
            a, b, c = (r[metric]["median"] for r in (pre, scr, tf))
            parts.append(
                f"at {percent(f)} pretrained {100 * (a - b):+.1f} points vs scratch, {100 * (a - c):+.1f} vs "
                f"{NAMES[baseline(study)]}"
            )
    return ("Median test " + metric + ": " + "; ".join(parts) + ".") if parts else ""


def _provenance(page: Page, d: Path, study: dict, run: Path) -> None:
    spec, ds = study["config"], study["dataset"]
    page.heading("Data and method")
    sizes = ", ".join(f"{s} {n:,}" for s, n in ds["sizes"].items())
    limits = {s: ds.get(f"{s}_limit") for s in ("train", "validation", "test")}
    cut = [f"{s} to the first {n:,}" for s, n in limits.items() if n]
    limit = f" ({', '.join(cut)})" if cut else ""
    labels = ", ".join(f"{k} {v:,}" for k, v in ds["labels"].items())
    page.table(
        ["", ""],
        [
            ["dataset", ds["name"]],
            ["what", ds.get("description", "")],
            ["source", ds.get("source", "")],
            ["licence", ds.get("licence", "")],
            ["splits", ds.get("splits", "")],
            ["sizes", sizes + limit],
            ["training labels", labels],
        ],
    )
    epochs = f"{spec['epochs']:g} epoch{'' if spec['epochs'] == 1 else 's'}"
    page.text(
        "Label fractions are stratified, seeded subsets of the training split: ceil(fraction x count) "
        "examples of every label, drawn by one shuffle per label and seed, so a smaller fraction lies "
        "inside a larger one and pretrained, scratch and the baseline see the same examples. Validation and "
        f"test are the same for every cell{limit or ' and whole'}. Each finetuning cell trains {epochs} over "
        f"its subset but at least {spec['min_steps']} steps, with at most about "
        f"{spec.get('max_evals', MAX_EVALS)} validation "
        "evaluations. " + METHODS[baseline(study)].format(grid=list(C_GRID), sklearn=sklearn_version())
    )
    page.code((d / "study.yaml").read_text(encoding="utf-8"), "study.yaml")
    if run.is_dir():
        R.config_blocks(page, run, "pretrained run")
