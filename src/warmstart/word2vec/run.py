"""`warmstart word2vec train`: vectors from catalog corpora into a run directory, evaluated and pictured.

A run directory holds config.yaml, vectors.npy + vectors.vocab.txt (words and counts, most frequent first),
metrics.json (training figures and the evaluation), evaluation.md and projection.png. Nothing is written
until training has finished, so a bad corpus or a refused directory never leaves a half-written run.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

from warmstart import config as C
from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.paths import refuse_overlap
from warmstart.train.rundir import check_free, open_run_dir, save_config, settle
from warmstart.word2vec import evaluate, io
from warmstart.word2vec.train import Word2VecConfig, train
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.words import corpus_documents


@dataclass
class Word2VecRunConfig:
    out: str = opt("runs/word2vec", "run directory (refused if it exists, unless --overwrite)")
    corpus: list[str] = opt(["wiki-leads", "news"], "corpus names (see `warmstart data list`) or text files")
    split_seed: int = opt(0, "seed of the train/validation/test split of corpora without official splits")
    text_column: str = opt("text", "column holding the text in csv/tsv/jsonl/parquet files")
    txt_mode: str = opt(
        "line", "for .txt files: 'line' (one document per line) or 'blank' (blank-line separated)"
    )
    restrict: int = opt(30000, "analogies are searched among the N most frequent words (0 = all)")
    counterfactual: bool = opt(
        False,
        "counterfactual data augmentation: train on each document and its copy with the gendered words "
        "swapped (he<->she, man<->woman, ...; data/counterfactual.py)",
    )
    word2vec: Word2VecConfig = dataclasses.field(default_factory=Word2VecConfig)


def evaluate_all(wv: WordVectors, restrict: int | None) -> dict:
    """Analogies (restricted to the top ``restrict`` words) and both similarity sets, as a JSON-able dict."""

    result = evaluate.analogy(wv, restrict=restrict or None)
    sims = {name: evaluate.similarity(wv, dataset=name) for name in ("wordsim353", "simlex999")}
    return {
        "analogy": result.to_dict(),
        "similarity": {name: r.to_dict() for name, r in sims.items()},
        "markdown": evaluate.analogy_table(result) + "\n\n" + evaluate.similarity_table(sims),
    }


def run(flags: dict, overrides=(), overwrite: bool = False) -> dict:

    explicit = C.layered(flags=flags, overrides=overrides)
    cfg = C.from_dict(Word2VecRunConfig, explicit)
    out = Path(cfg.out)
    fix = "pass --overwrite to replace it, or choose another --out"
    check_free(out, overwrite, fix)  # before training, so that a refusal costs nothing
    refuse_overlap(out, {f"corpus {c}": c for c in cfg.corpus})
    docs = corpus_documents(
        cfg.corpus, "train", cfg.split_seed, cfg.counterfactual, cfg.text_column, cfg.txt_mode
    )
    wv, stats = train(docs, cfg.word2vec)
    scores = evaluate_all(wv, cfg.restrict)
    run_dir = open_run_dir(out, overwrite=overwrite, fix=fix, what="word2vec")
    save_config(run_dir, C.to_dict(cfg))
    io.save(wv, run_dir / io.RUN_VECTORS, "npy")
    settle(run_dir)  # --overwrite: the vectors are saved, the replaced run can go
    markdown = scores.pop("markdown")
    (run_dir / "metrics.json").write_text(json.dumps({"train": stats, **scores}, indent=2) + "\n")
    (run_dir / "evaluation.md").write_text(markdown + "\n")
    from warmstart.word2vec import plot  # matplotlib: not at the command line's start-up

    try:
        picture = plot.projection_png(
            wv, plot.COUNTRY_CAPITAL + plot.COMPARATIVES, run_dir / "projection.png", title="word2vec, PCA"
        )
    except WarmstartError as exc:  # a small corpus may know none of the pairs: the run stands without it
        warnings.warn(f"no projection.png: {exc}", stacklevel=2)
        picture = None
    return {"run_dir": str(run_dir), "train": stats, **scores, "markdown": markdown, "picture": picture}
