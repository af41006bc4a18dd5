"""`warmstart demo`: the whole path on the embedded real data, then a report of what pretraining bought.

1. WordPiece tokenizer on wiki-leads + news (train splits).
2. Skip-gram word vectors on the same text: the starting point of the BERT's token embeddings.
3. Token shards of the same corpora; a small BERT pretrained by masked LM, its whole-word token embeddings
   started from the word vectors and its position table from sinusoids (both still learned); warmup-stable-
   decay learning rate (peak held, decayed over the last 20% of the steps).
4. The pretrained model and an identical randomly initialised twin, each finetuned on all of rotten-tomatoes'
   training labels.
5. The same two, and TF-IDF + logistic regression, on 10% of the labels over 3 seeds (`warmstart study`):
   where pretraining is expected to pay, when labels are scarce.
6. RUN/report.md with test accuracies, plus PNG plots of pretraining loss and finetuning curves
   (RUN/label-scarce/report.html has the study's own report).
"""

from __future__ import annotations

import time
from pathlib import Path

from warmstart.data.catalog import DataOptions
from warmstart.data.corpus import corpus_texts, prepare_corpus
from warmstart.finetune import finetune
from warmstart.pretrain import pretrain
from warmstart.report.demo_report import write_demo_report
from warmstart.study.run import run_study
from warmstart.study.spec import StudySpec
from warmstart.tokenization import train_tokenizer
from warmstart.train.rundir import open_run_dir
from warmstart.word2vec.run import run as word2vec_run

CORPORA = ["wiki-leads", "news"]
TASK = "rotten-tomatoes"

# The full demo fits in 20 minutes on 2 CPU cores; --quick checks the plumbing in about a minute.
BUDGETS = {
    "full": {
        "vocab": 8192,
        "steps": 2000,
        "batch": 32,
        "seq": 128,
        "ft_epochs": 3,
        "ft_lr": 3e-4,
        "ft_limit": None,
        "w2v_epochs": 5,
        "scarce_fraction": 0.1,
        "scarce_seeds": [1, 2, 3],
        "scarce_min_steps": 100,
    },
    "quick": {
        "vocab": 2000,
        "steps": 30,
        "batch": 8,
        "seq": 64,
        "ft_epochs": 1,
        "ft_lr": 1e-4,
        "ft_limit": 256,
        "w2v_epochs": 1,
        "scarce_fraction": 0.5,
        "scarce_seeds": [1],
        "scarce_min_steps": 4,
    },
}


def run_demo(out: str | Path = "runs/demo", quick: bool = False, overwrite: bool = False) -> Path:
    out = open_run_dir(out, overwrite=overwrite, fix="pass --overwrite to redo the demo there, or --out DIR")
    b = BUDGETS["quick" if quick else "full"]
    timings = {}

    t = time.perf_counter()
    opts = DataOptions(label_column=None)
    tok = train_tokenizer(corpus_texts(CORPORA, opts, "train"), "wordpiece", b["vocab"], out / "tokenizer")
    timings["tokenizer"] = time.perf_counter() - t

    t = time.perf_counter()
    word2vec_run(
        {
            "out": str(out / "word2vec"),
            "corpus": CORPORA,
            "word2vec": {"epochs": b["w2v_epochs"], "sample": 1e-4},
        }
    )
    timings["word2vec"] = time.perf_counter() - t

    t = time.perf_counter()
    prepare_corpus(CORPORA, opts, tok, out / "shards", splits=("train", "validation"))
    timings["prepare"] = time.perf_counter() - t

    t = time.perf_counter()
    overrides = [
        f"train.batch_size={b['batch']}",
        f"data.seq_len={b['seq']}",
        "train.eval_every=200",
        "train.save_every=400",
        "train.bf16=true",
        "train.schedule=wsd",  # peak held, decayed over the last 20%: MLM 4.5 vs 5.05 (linear), 2,100 steps
        "train.eval_batches=20",
        "train.log_every=20",
        f"embeddings.vectors={out / 'word2vec'}",
        "model.position_init=sinusoidal",
    ]
    if quick:
        overrides += ["train.eval_every=10", "train.save_every=10", "train.log_every=5"]
    pretrain(
        "bert-mini",
        None,
        {
            "out": str(out / "pretrain"),
            "train": {"steps": b["steps"]},
            "data": {"shards": str(out / "shards")},
        },
        overrides,
    )
    timings["pretrain"] = time.perf_counter() - t

    runs = {}
    for name, scratch in [("pretrained", False), ("scratch", True)]:
        t = time.perf_counter()
        runs[name] = out / f"finetune-{name}"
        flags = {
            "init": str(out / "pretrain"),
            "from_scratch": scratch,
            "out": str(runs[name]),
            "epochs": b["ft_epochs"],
            "data": {"dataset": TASK},
            "train": {"seed": 0},
        }
        finetune(None, flags, finetune_recipe(b))
        timings[f"finetune ({name})"] = time.perf_counter() - t

    t = time.perf_counter()
    study = label_scarce_study(out, b)
    timings["label-scarce study"] = time.perf_counter() - t

    return write_demo_report(out, out / "pretrain", runs, timings, b, study)


def finetune_recipe(b: dict) -> list[str]:
    """The finetuning settings both comparisons share, as dotted overrides."""
    recipe = [f"train.lr={b['ft_lr']}", "train.batch_size=32", "train.bf16=true", "task.max_length=64"]
    return recipe + ([f"data.train_limit={b['ft_limit']}"] if b["ft_limit"] else [])


def label_scarce_study(out: Path, b: dict) -> dict:
    """Pretrained vs scratch vs TF-IDF on a fraction of the training labels, over seeds (study.json)."""
    overrides = [*finetune_recipe(b), "evals_per_epoch=1"]  # ~3 evaluations per 100-step cell: < 20 min
    spec = StudySpec(
        run=str(out / "pretrain"),
        dataset=TASK,
        fractions=[b["scarce_fraction"]],
        seeds=b["scarce_seeds"],
        epochs=b["ft_epochs"],
        min_steps=b["scarce_min_steps"],
        overrides=overrides,
    )
    return run_study(spec, out / "label-scarce", overwrite=True)
