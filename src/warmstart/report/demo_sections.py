"""The demo report's numbers and sections: one study's comparison, the probes, the word-sense picture."""

from __future__ import annotations

from pathlib import Path

from warmstart.report import run_report as R
from warmstart.report.html import Page
from warmstart.report.panel_plot import Panel, panel_plot
from warmstart.report.quoting import quoted
from warmstart.report.study_report import (
    NAMES,
    baseline,
    convergence,
    fraction_plot,
    median_curves,
    percent,
    steps_to_reach,
)
from warmstart.train.logging import read_metrics, series


def row(study: dict, model: str, fraction: float) -> dict | None:
    return next((r for r in study["table"] if r["model"] == model and r["fraction"] == fraction), None)


def median(study: dict, model: str, fraction: float) -> float | None:
    r = row(study, model, fraction)
    return r[study["metric"]]["median"] if r else None


def spread(study: dict, model: str, fraction: float) -> str:
    """'0.9531' for one seed, '0.7460 (0.7401-0.7534)' for several."""
    r = row(study, model, fraction)
    if r is None:
        return "-"
    m = r[study["metric"]]
    return (
        f"{m['median']:.4f}" if len(r["seeds"]) == 1 else f"{m['median']:.4f} ({m['min']:.4f}-{m['max']:.4f})"
    )


def paired(study: dict, fraction: float) -> list[float]:
    """Per seed, pretrained minus scratch (points), where both cells exist."""
    metric = study["metric"]
    acc = {(c["model"], c["seed"]): c["test"][metric] for c in study["cells"] if c["fraction"] == fraction}
    seeds = sorted(s for m, s in acc if m == "pretrained" and ("scratch", s) in acc)
    return [100 * (acc["pretrained", s] - acc["scratch", s]) for s in seeds]


def steps_to_match(study: dict) -> dict | None:
    """At the largest fraction: the scratch twin's best median validation score and its step, and the
    first step at which the pretrained model's median reaches it (None: never); step 0, before training,
    counts for neither (``steps_to_reach``)."""
    metric, fraction = study["metric"], max(study["fractions"])

    def curve(model):
        cells = [c for c in study["cells"] if c["model"] == model and c["fraction"] == fraction]
        return median_curves(cells, metric)

    twin, pre = curve("scratch"), curve("pretrained")
    match = steps_to_reach(twin, pre)
    if match is None:
        return None
    best, best_step, reached = match
    first = next((s for s in twin[0] if s > 0), best_step)  # the twin's first evaluation after training
    return {"twin_best": best, "twin_step": best_step, "pretrained_step": reached, "last": pre[0][-1],
            "twin_never_improved": best_step == first}  # fmt: skip


def study_section(page: Page, study: dict, out: Path, name: str, title: str, intro: str) -> None:
    """The comparison table, the label-fraction plot and the convergence plot of one study."""
    page.heading(title)
    page.text(intro)
    metric, base = study["metric"], baseline(study)
    rows = []
    for f in study["fractions"]:
        r = row(study, "pretrained", f)
        gaps = paired(study, f)
        rows.append(
            [
                percent(f),
                f"{r['train_examples']:,}" if r else "-",
                ", ".join(map(str, r["seeds"])) if r else "-",
                spread(study, "pretrained", f),
                spread(study, "scratch", f),
                spread(study, base, f),
                ", ".join(f"{g:+.1f}" for g in gaps) or "-",
            ]
        )
    page.table(
        [
            "labels",
            "train examples",
            "seeds",
            "pretrained",
            "random twin",
            NAMES[base],
            "pretrained - twin, by seed (points)",
        ],  # fmt: skip
        rows,
        f"Test {metric}: the median over seeds and (min-max); each seed draws its own subset and data "
        "order, the same for all three models.",
    )
    target = out / f"{name}.html"
    page.image(fraction_plot(study, target), f"{name}: test {metric} by label fraction")
    path, note = convergence(study, target)
    page.image(path, f"{name}: validation {metric} by finetuning step")
    if note:
        page.text(note)


def probes_section(page: Page, probes: dict) -> None:
    page.heading("What pretraining put into the model: cloze probes")
    hits, top10 = probes["top1"], probes["top10"]
    page.text(
        "Sentences of our own with one gap, filled by the demo model's masked-LM head and by its random twin "
        f'(`warmstart fill-mask RUN "..."`). The expected word is the top guess {hits["pretrained"]} of '
        f"{len(probes['probes'])} times for the pretrained model and {hits['twin']} times for the twin, and "
        f"among the top 10 {top10['pretrained']} and {top10['twin']} times. Rank: where the expected word "
        "stands among all tokens (- when the tokenizer splits it)."
    )
    rows = []
    for p, pre, twin in zip(probes["probes"], probes["pretrained"], probes["twin"]):
        top = ", ".join(f"{quoted(t)} {s:.2f}" for t, s in pre["top"])
        rows.append(
            [
                p["kind"],
                p["text"],
                quoted(p["expected"]),
                top,
                pre["rank"] or "-",
                quoted(twin["top"][0][0]),
                twin["rank"] or "-",
            ]
        )
    page.table(["kind", "probe", "expected", "pretrained: top 3", "rank", "twin: top 1", "twin rank"], rows)


def senses_section(page: Page, senses: dict, word: str) -> None:
    pre, twin = senses["pretrained"], senses["twin"]
    page.heading(f"What pretraining put into the model: one word, many senses ('{word}')")
    counts = ", ".join(f"{k} {v}" for k, v in pre["senses"].items())
    sp, st = pre["separation"], twin["separation"]
    page.text(
        f"'{word}' in {pre['count']} sentences of {pre['data']} ({counts}; the sense is read from cue words "
        "in the sentence), embedded by the demo model's last layer (left: PCA), beside its single static "
        "word2vec vector among its neighbours and the sense cues (right). How well each representation "
        f"tells the senses apart (leave-one-out nearest sense centroid): pretrained {sp['accuracy']:.2f}, "
        f"random twin {st['accuracy']:.2f}, static vector {sp['chance']:.2f} (one vector for every sentence: "
        "the majority share). A random encoder's vectors also mix the sentence's own words, cue words "
        "included, so the twin's score is the bar the pretrained model has to clear."
    )
    page.image(Path(pre["plot"]), f"contextual vectors of '{word}' by sense, and its static vector")


def time_section(page: Page, timings: dict, machine: dict, pretrain_rate: float | None) -> None:
    page.heading("Time and machine")
    rows = [[k, f"{v:.0f}"] for k, v in timings.items()]
    rows.append(["total", f"{sum(timings.values()):.0f}"])
    page.table(["stage", "seconds"], rows)
    rate = f", masked-LM pretraining at {pretrain_rate:,.0f} tokens/s" if pretrain_rate else ""
    page.text(
        f"{machine['processor']}, {machine['threads']} threads, torch {machine['torch']}; measured matmul "
        f"rate {machine['bf16_gflops']:.0f} GFLOP/s in bf16 and {machine['fp32_gflops']:.0f} in fp32 "
        f"(1024^3){rate}. Machines of the same kind differ up to 2x in bf16: compare by these rates."
    )


def pretraining_lines(out: Path) -> list[str]:
    """Validation MLM loss first -> last, and the starting-point note (word vectors, sinusoids)."""
    import json

    val = read_metrics(out / "pretrain", "validation")
    lines = []
    if val:
        a, b = val[0], val[-1]
        lines.append(
            f"Validation MLM loss {a['loss']:.3f} at step {a['step']} -> {b['loss']:.3f} at step "
            f"{b['step']:,} (perplexity {a['perplexity']:.0f} -> {b['perplexity']:.1f}; masked-token "
            f"accuracy {a['accuracy']:.3f} -> {b['accuracy']:.3f})."
        )
    w2v, warm = out / "word2vec" / "metrics.json", out / "pretrain" / "warm_start.json"
    if w2v.is_file() and warm.is_file():
        m, w = json.loads(w2v.read_text()), json.loads(warm.read_text())
        lines.append(
            f"Starting point: skip-gram vectors trained first on the same text ({m['train']['vocab_size']:,} "
            f"words, {m['train']['seconds']:.0f} s; analogy accuracy {m['analogy']['accuracy']:.1%}, "
            f"wordsim353 rho {m['similarity']['wordsim353']['spearman']:.3f}) give {w['tokens_warm']:,} of "
            f"the {w['vocab_size']:,} token embeddings their first values; the position table starts as "
            "sinusoids. Both are learned on."
        )
    return lines


def pretraining_plot(out: Path, target: Path) -> Path:

    train, val = read_metrics(out / "pretrain", "train"), read_metrics(out / "pretrain", "validation")
    xy = series
    panels = [
        Panel("masked-LM loss", "loss", {"train": xy(train, "loss"), "validation": xy(val, "loss")},
              smooth=("train",)),
        Panel("learning rate", "learning rate", {"lr": xy([r for r in train if "lr" in r], "lr")}, rate=True),
    ]  # fmt: skip
    return panel_plot(panels, "pretraining step", R.plot_path(target, "pretraining"))
