"""Text corpora for pretraining: one or more catalog datasets, split by the catalog, turned into shards."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from warmstart.config import opt
from warmstart.data.catalog import open_dataset
from warmstart.data.counterfactual import augmented_texts
from warmstart.data.dataset import DataOptions
from warmstart.data.shard_writer import prepare_shards
from warmstart.data.split_streams import split_streams
from warmstart.errors import WarmstartError
from warmstart.paths import refuse_overlap

SPLITS = ("train", "validation", "test")


@dataclass
class DataConfig:
    corpus: list[str] = opt([], "corpus names (see `warmstart data list`) or text files; several are joined")
    shards: str | None = opt(None, "token shards made by `warmstart prepare` (instead of --corpus)")
    tokenizer: str | None = opt(None, "tokenizer directory made by `warmstart tokenizer train`")
    tokenizer_kind: str | None = opt(
        None, "the tokenizer kind a recipe needs (checked before training): wordpiece, bpe, unigram or word"
    )
    vocab_size: int = opt(
        30000,
        "a recipe that names its tokenizer kind (ELMo: word, XLNet: unigram), given --corpus and no "
        "--tokenizer: the size of the tokenizer trained for it (once, into the cache)",
    )
    seq_len: int = opt(128, "tokens per packed training sequence, special tokens included")
    text_column: str = opt("text", "column holding the text in csv/tsv/jsonl/parquet files")
    txt_mode: str = opt(
        "line", "for .txt files: 'line' (one document per line) or 'blank' (blank-line separated)"
    )
    split_seed: int = opt(0, "seed of the train/validation/test split of corpora without official splits")
    validation_fraction: float | None = opt(
        None, "held-out validation fraction (default 0.02; 0.1 holds out a labeled set's texts: data show)"
    )
    test_fraction: float | None = opt(None, "held-out test fraction (default 0.01)")
    max_tokens: int | None = opt(
        None,
        "pretrain on the first N tokens of the train split only (whole packed windows), repeated to fill "
        "the steps; validation stays the whole split",
    )
    counterfactual: bool = opt(
        False,
        "counterfactual data augmentation: each training text of --corpus is followed by a copy with its "
        "gendered words swapped (he<->she, man<->woman, ...; data/counterfactual.py); validation as it is",
    )

    def __post_init__(self):
        if self.counterfactual and self.shards:
            raise WarmstartError(
                "data.counterfactual swaps words in the text of --corpus, but --shards are tokens already",
                "pass --corpus instead of --shards, or drop data.counterfactual=true",
            )
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise WarmstartError(
                f"data.max_tokens must be at least 1, got {self.max_tokens}",
                "use e.g. data.max_tokens=1000000, or leave it out to train on every token",
            )


def options(cfg: DataConfig) -> DataOptions:
    return DataOptions(
        text_column=cfg.text_column,
        txt_mode=cfg.txt_mode,
        split_seed=cfg.split_seed,
        label_column=None,
        validation_fraction=cfg.validation_fraction,
        test_fraction=cfg.test_fraction,
    )


def corpus_texts(names: list[str], opts: DataOptions, split: str):
    """The texts of ``split`` of every named corpus, one after the other (streaming)."""
    datasets = [open_dataset(n, opts) for n in names]
    return itertools.chain.from_iterable(d.texts(split) for d in datasets)


def prepare_corpus(
    names: list[str],
    opts: DataOptions,
    tokenizer,
    out_dir: Path,
    overwrite: bool = False,
    splits=SPLITS,
    tokenizer_dir: str | Path | None = None,
    counterfactual: bool = False,
    dedupe: bool = False,
    among_processes: bool = False,
) -> dict:
    """Token shards of the named corpora in ``out_dir``; an ``out_dir`` that is, holds or lies inside a
    corpus or the tokenizer's directory (``tokenizer_dir``) is refused before anything changes.
    ``counterfactual``: each train text is followed by its gender-swapped copy (data/counterfactual.py);
    ``dedupe``: exact duplicate documents dropped (data/dedupe.py); ``among_processes``: under torchrun, the
    tokenizing shared among the processes (data/prepare_ranks.py)."""
    refuse_overlap(out_dir, {**{f"corpus {n}": n for n in names}, "--tokenizer": tokenizer_dir})
    by_split = split_streams([open_dataset(n, opts) for n in names], splits)  # one reading pass
    source = {
        "corpus": list(names),
        "split_seed": opts.split_seed,
        "txt_mode": opts.txt_mode,
        "text_column": opts.text_column,
    }
    if counterfactual and "train" in by_split:
        by_split["train"] = augmented_texts(by_split["train"])
        source["counterfactual"] = True
    return prepare_shards(
        by_split, tokenizer, out_dir, overwrite=overwrite, source=source, dedupe=dedupe,
        among_processes=among_processes,
    )  # fmt: skip


def ensure_shards(cfg: DataConfig, tokenizer, run_dir: Path) -> Path:
    """Shards for a run given --corpus: prepared once into RUN/shards and reused on resume."""
    out = Path(run_dir) / "shards"
    if not (out / "meta.json").is_file():
        prepare_corpus(
            cfg.corpus,
            options(cfg),
            tokenizer,
            out,
            overwrite=out.exists(),
            splits=("train", "validation"),
            counterfactual=cfg.counterfactual,
        )
    return out
