"""The finetuning data section: which dataset, which splits, how much of them, and the catalog options."""

from __future__ import annotations

from dataclasses import dataclass

from warmstart.config import opt
from warmstart.data.dataset import DataOptions

SPLITS = ("train", "validation", "test")


@dataclass
class FinetuneDataConfig:
    dataset: str = opt("", "labeled data: a name from `warmstart data list`, a local file or hf:NAME")
    text_column: str = opt("text", "column with the text (csv/tsv/jsonl/parquet/hf)")
    text_pair_column: str | None = opt(None, "column with the second text of a sentence pair")
    label_column: str = opt("label", "column with the label")
    target_column: str = opt("target", "text_to_text: column with the output text")
    split_seed: int = opt(0, "seed of the hashed train/validation/test split (data without official splits)")
    train_limit: int | None = opt(None, "use only the first N training examples (data-efficiency studies)")
    validation_limit: int | None = opt(
        None, "use only the first N validation examples (model selection and curves; quicker evaluations)"
    )
    test_limit: int | None = opt(None, "score only the first N test examples (quick checks; default: all)")
    train_fraction: float = opt(
        1.0, "use a seeded, stratified fraction of the training examples, nested across fractions (0-1]"
    )
    subset_seed: int = opt(0, "seed of the train_fraction subset")


def data_options(d: FinetuneDataConfig, kind: str = "labeled") -> DataOptions:
    return DataOptions(
        text_column=d.text_column,
        text_pair_column=d.text_pair_column,
        label_column=d.label_column,
        target_column=d.target_column if kind == "seq2seq" else None,
        split_seed=d.split_seed,
    )


def limited(records: dict[str, list[dict]], d: FinetuneDataConfig) -> dict[str, list[dict]]:
    """Each split cut to its data.*_limit (None: whole)."""
    limits = {"train": d.train_limit, "validation": d.validation_limit, "test": d.test_limit}
    return {s: rows[: limits.get(s)] for s, rows in records.items()}
