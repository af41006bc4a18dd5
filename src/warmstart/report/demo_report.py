"""The demo's report: runs/demo/report.md with test accuracies and PNG plots."""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path

import torch

from warmstart.config import load_yaml
from warmstart.report.plots import line_plot
from warmstart.train.logging import read_metrics


def read_test_metrics(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / "test_metrics.json").read_text())


def _xy(rows: list[dict], key: str) -> tuple[list, list]:
    rows = [r for r in rows if key in r]
    return [r["step"] for r in rows], [r[key] for r in rows]


def write_demo_report(
    out: Path,
    pretrain_dir: Path,
    finetune_dirs: dict[str, Path],
    timings: dict,
    budget: dict,
    study: dict | None = None,
) -> Path:
    train_rows = read_metrics(pretrain_dir, "train")
    val_rows = read_metrics(pretrain_dir, "validation")
    line_plot(
        {"train loss": _xy(train_rows, "loss"), "validation loss": _xy(val_rows, "loss")},
        "Masked-LM pretraining (bert-mini, wiki-leads + news)",
        "step",
        "MLM loss",
        out / "pretrain_loss.png",
    )
    curves = {name: _xy(read_metrics(d, "validation"), "accuracy") for name, d in finetune_dirs.items()}
    line_plot(
        curves,
        "Finetuning on rotten-tomatoes: validation accuracy",
        "step",
        "accuracy",
        out / "finetune_curves.png",
    )
    tests = {name: read_test_metrics(d) for name, d in finetune_dirs.items()}
    first, last = val_rows[0], val_rows[-1]
    pre, scr = tests["pretrained"]["test"]["accuracy"], tests["scratch"]["test"]["accuracy"]
    sizes = tests["pretrained"]["sizes"]
    config = json.loads((pretrain_dir / "final" / "config.json").read_text())
    pre_cfg = load_yaml(pretrain_dir / "config.yaml")
    params = sum(p.numel() for p in _encoder_params(pretrain_dir))
    lines = [
        "# warmstart demo: what pretraining bought",
        "",
        f"Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC} on {platform.machine()}, "
        f"{torch.get_num_threads()} threads, torch {torch.__version__}.",
        "",
        "## Result",
        "",
        "| model | test accuracy | best validation accuracy | best step |",
        "|---|---|---|---|",
    ]
    for name, t in tests.items():
        lines.append(
            f"| {name} | {t['test']['accuracy']:.4f} | {t['best_validation']:.4f} | {t['best_step']} |"
        )
    verdict = "above" if pre > scr else "NOT above"
    lines += [
        "",
        f"The pretrained model's test accuracy is **{verdict}** the scratch twin's "
        f"({pre:.4f} vs {scr:.4f}, {100 * (pre - scr):+.1f} points) on {sizes['test']:,} test snippets "
        f"(train {sizes['train']:,}, validation {sizes['validation']:,}). Test accuracy is measured once, "
        "with the weights of the best validation evaluation.",
        "",
        *(_scarce_lines(study) if study else []),
        "## Pretraining",
        "",
        f"bert-mini ({config['num_hidden_layers']} layers, hidden {config['hidden_size']}, "
        f"{config['num_attention_heads']} heads, vocab {config['vocab_size']:,}; {params / 1e6:.1f}M encoder "
        f"parameters), masked LM on wiki-leads + news, {budget['steps']} steps of {budget['batch']} x "
        f"{budget['seq']} tokens, {'pre-LN' if pre_cfg['model']['pre_ln'] else 'post-LN'}, "
        f"{pre_cfg['mlm']['mask_prob']:.0%} of tokens masked, bf16 autocast, peak learning rate "
        f"{pre_cfg['train']['lr']:g} ({_schedule(pre_cfg['train'])}).",
        "",
        f"Validation MLM loss: {first['loss']:.3f} at step {first['step']} -> {last['loss']:.3f} at step "
        f"{last['step']} (perplexity {first['perplexity']:.0f} -> {last['perplexity']:.1f}; masked-token "
        f"accuracy {first['accuracy']:.3f} -> {last['accuracy']:.3f}).",
        "",
        *_starting_point(out, pretrain_dir, pre_cfg),
        "![pretraining loss](pretrain_loss.png)",
        "",
        "## Finetuning",
        "",
        f"rotten-tomatoes (fresh vs rotten), linear layer on [CLS], all parameters trained, "
        f"{budget['ft_epochs']} epochs, peak learning rate {budget['ft_lr']}, warmup 10% + linear decay, "
        "batch 32, max 64 tokens. Both models share architecture, tokenizer, data order and seed; only the "
        "initial encoder weights differ.",
        "",
        "![finetuning curves](finetune_curves.png)",
        "",
        "## Time",
        "",
        "| stage | seconds |",
        "|---|---|",
        *[f"| {k} | {v:.0f} |" for k, v in timings.items()],
        f"| total | {sum(timings.values()):.0f} |",
        "",
    ]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _scarce_lines(study: dict) -> list[str]:
    """The label-scarce comparison: median (min-max) test accuracy over seeds, per model."""
    rows = {r["model"]: r for r in study["table"]}
    pre, scr = rows["pretrained"], rows["scratch"]
    n, seeds = pre["train_examples"], pre["seeds"]
    names = {"pretrained": "pretrained", "scratch": "scratch", "tfidf": "TF-IDF + logistic regression"}
    lines = [
        f"### With {pre['fraction']:.0%} of the labels ({n:,} training examples)",
        "",
        f"The same finetuning on a stratified {pre['fraction']:.0%} subset of the training split, once per "
        f"seed ({', '.join(map(str, seeds))}: each seed draws its own subset and its own data order; at"
        f" least {study['config']['min_steps']} steps). Test accuracy, median over seeds (min - max):",
        "",
        "| model | median | min - max |",
        "|---|---|---|",
    ]
    for model, name in names.items():
        if model in rows:
            a = rows[model]["accuracy"]
            lines.append(f"| {name} | {a['median']:.4f} | {a['min']:.4f} - {a['max']:.4f} |")
    p, s = pre["accuracy"], scr["accuracy"]
    verdict = "above" if p["median"] > s["median"] else "NOT above"
    lines += [
        "",
        f"With {n:,} labels the pretrained model's median test accuracy is **{verdict}** the scratch twin's "
        f"({p['median']:.4f} vs {s['median']:.4f}, {100 * (p['median'] - s['median']):+.1f} points; "
        f"its worst seed {p['min']:.4f} vs the twin's best {s['max']:.4f}). Paired by seed (the same subset"
        f" and data order for both), pretrained minus scratch: {_paired(study)}. Every cell: "
        "label-scarce/study.json; plots: label-scarce/report.html.",
        "",
    ]
    return lines


def _schedule(train: dict) -> str:
    if train["schedule"] == "wsd":
        return f"warmup, held, then linear decay over the last {train['decay_ratio']:.0%} of the steps"
    return f"warmup, then {train['schedule']}"


def _paired(study: dict) -> str:
    """Per seed, the pretrained model's test accuracy minus its twin's, in points, and how many are above."""
    acc = {(c["model"], c["seed"]): c["test"]["accuracy"] for c in study["cells"]}
    seeds = sorted(seed for model, seed in acc if model == "pretrained" and ("scratch", seed) in acc)
    gaps = [100 * (acc["pretrained", s] - acc["scratch", s]) for s in seeds]
    each = ", ".join(f"seed {s} {g:+.1f}" for s, g in zip(seeds, gaps))
    return f"{each} ({sum(g > 0 for g in gaps)} of {len(gaps)} above)"


def _starting_point(out: Path, pretrain_dir: Path, pre_cfg: dict) -> list[str]:
    """Lines on the word-vector warm start and the position initialisation, when the run used them."""
    lines = []
    w2v, warm = out / "word2vec" / "metrics.json", pretrain_dir / "warm_start.json"
    if w2v.is_file() and warm.is_file():
        m, w = json.loads(w2v.read_text()), json.loads(warm.read_text())
        t = m["train"]
        lines.append(
            "Starting point: skip-gram word vectors trained first on the same text "
            f"({t['vocab_size']:,} words, {t['seconds']:.0f} s; analogy accuracy "
            f"{m['analogy']['accuracy']:.1%} in the top 30k words, wordsim353 rho "
            f"{m['similarity']['wordsim353']['spearman']:.3f}) give {w['tokens_warm']:,} of the "
            f"{w['vocab_size']:,} token embeddings their first values (the whole-word tokens; the rest "
            "start random)."
        )
    if pre_cfg["model"].get("position_init") == "sinusoidal":
        lines.append(
            "The position table starts as sinusoids (scaled to the init std) and is learned from there."
        )
    return [*lines, ""] if lines else []


def _encoder_params(pretrain_dir: Path):
    from warmstart.pretrained import load_encoder

    encoder, _, _ = load_encoder(pretrain_dir)
    return encoder.parameters()
