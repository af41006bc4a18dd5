"""The finetuning data section: which dataset or split files, how much of them, and the catalog options."""

from __future__ import annotations

from dataclasses import dataclass

from warmstart.config import opt
from warmstart.data.catalog import open_data
from warmstart.data.dataset import DataOptions, Dataset
from warmstart.errors import WarmstartError

SPLITS = ("train", "validation", "test")
# the keys naming a file's columns (each a flag: --text-column ..., and a Python keyword: text_column=...)
COLUMNS = ("text_column", "text_pair_column", "label_column", "target_column")


@dataclass
class FinetuneDataConfig:
    dataset: str = opt(
        "",
        "labeled data: a name from `warmstart data list`, a local file, a folder of train.*, validation.* "
        "(or dev.*), test.* files, or hf:NAME",
    )
    train_file: str | None = opt(
        None, "your own training split, a file (with no dataset the splits not given are carved from it)"
    )
    validation_file: str | None = opt(
        None, "your own validation split, a file (replaces the dataset's; default: carved from train)"
    )
    test_file: str | None = opt(None, "your own test split, a file (replaces the dataset's; default: carved)")
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
    counterfactual: bool = opt(
        False,
        "counterfactual data augmentation: each training example (after the limits and fraction) gets a copy "
        "with its gendered words swapped (he<->she, man<->woman, ...; data/counterfactual.py), train split "
        "only; extractive QA is refused",
    )


def data_options(d: FinetuneDataConfig, kind: str = "labeled", empty_labels: bool = False) -> DataOptions:
    return DataOptions(
        text_column=d.text_column,
        text_pair_column=d.text_pair_column,
        label_column=d.label_column,
        empty_labels=empty_labels,
        target_column=d.target_column if kind == "seq2seq" else None,
        split_seed=d.split_seed,
    )


def data_columns(d: FinetuneDataConfig, kind: str, task: str) -> dict | None:
    """The columns a finetuning read (``kind``: its task's dataset kind), as its run card keeps them; None
    for a multitask run (its tasks read their own datasets)."""
    if task == "multitask":
        return None
    columns = {"text": d.text_column, "label": d.label_column}
    if d.text_pair_column:
        columns["text_pair"] = d.text_pair_column
    if kind == "seq2seq":
        columns["target"] = d.target_column
    return columns


def limited(records: dict[str, list[dict]], d: FinetuneDataConfig) -> dict[str, list[dict]]:
    """Each split cut to its data.*_limit (None: whole)."""
    limits = {"train": d.train_limit, "validation": d.validation_limit, "test": d.test_limit}
    return {s: rows[: limits.get(s)] for s, rows in records.items()}


def split_files(d: FinetuneDataConfig) -> dict[str, str]:
    """{split: file} of the own split files given (train_file, validation_file, test_file)."""
    given = {"train": d.train_file, "validation": d.validation_file, "test": d.test_file}
    return {split: str(f) for split, f in given.items() if f}


def open_finetune_data(d: FinetuneDataConfig, kind: str = "labeled", empty_labels: bool = False) -> Dataset:
    """The dataset of ``d``: its dataset with its own split files (data/split_files.py); ``empty_labels``:
    an empty label is a row none of the labels apply to (multi-label)."""
    if not d.dataset and not split_files(d):
        raise WarmstartError(
            "no dataset given",
            "pass --dataset NAME_FILE_OR_DIR or --train-file FILE (see `warmstart data list`)",
        )
    return open_data(d.dataset, split_files(d), data_options(d, kind, empty_labels))
