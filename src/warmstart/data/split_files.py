"""The user's own splits: a folder of ``train.*``, ``validation.*`` (or ``dev.*``) and ``test.*`` files, the
``--train-file`` / ``--validation-file`` / ``--test-file`` options, and such files replacing splits of a
dataset.

A split given as a file is taken as it is. A split not given is carved from the training data by the hashed
split (``data/splits.py``), with its own fraction only: given train and test, validation is the hashed 10%
of train and the other 90% stays train. A dataset that has splits of its own (a hub dataset, a folder) keeps
those the files do not replace; a dataset without them (one file, a packaged dataset) is the training data
the missing splits are carved from. Where each split came from is one line, ``Dataset.origin``.
"""

from __future__ import annotations

from pathlib import Path

from warmstart.data import compressed, readers, splits
from warmstart.data.dataset import DataOptions, Dataset
from warmstart.errors import WarmstartError

# file stems of each split in a folder, as `datasets` reads a data_dir
STEMS = {"train": ("train",), "validation": ("validation", "dev"), "test": ("test",)}


def folder_files(folder: Path) -> dict[str, Path]:
    """{split: file} of a folder holding train.*, validation.* or dev.*, test.* (supported extensions, the
    text kinds also as .gz or .zst: train.jsonl.gz)."""
    found: dict[str, list[Path]] = {split: [] for split in STEMS}
    for path in sorted(folder.iterdir()):
        if path.is_file() and compressed.kind(path) in readers.SUPPORTED_EXTENSIONS:
            for split, stems in STEMS.items():
                if compressed.stem(path).lower() in stems:
                    found[split].append(path)
    for split, paths in found.items():
        if len(paths) > 1:
            raise WarmstartError(
                f"{folder} holds {len(paths)} {split} files: {', '.join(p.name for p in paths)}",
                "keep one file per split in the folder, or name each with --train-file, --validation-file, "
                "--test-file",
            )
    files = {split: paths[0] for split, paths in found.items() if paths}
    if not files:
        data = [
            p for p in folder.iterdir() if p.is_file() and compressed.kind(p) in readers.SUPPORTED_EXTENSIONS
        ]
        kinds = sorted({compressed.kind(p) for p in data})
        held = f"; it holds {len(data):,} {'/'.join(kinds)} file{'s' * (len(data) != 1)}" if data else ""
        files_fix = (
            f"pass the files themselves (--corpus {folder}/*{kinds[0]}: a corpus joins several), "
            if data
            else ""
        )
        raise WarmstartError(
            f"{folder} is a folder without split files (train.*, validation.* or dev.*, test.*){held}",
            f"{files_fix}name the files by split, with one of {', '.join(readers.SUPPORTED_EXTENSIONS)}, "
            "or pass a file",
        )
    return files


def _check_kinds(kind: str, train_name: str, parts: dict[str, Dataset], shown: dict[str, str], options):
    for split, part in parts.items():
        if part.kind != kind:
            raise WarmstartError(
                f"the {split} data {shown[split]} is a {part.kind} dataset but the training data "
                f"{train_name} is a {kind} dataset",
                f"give every split the same columns (label column now '{options.label_column}')",
            )


def combine(
    parts: dict[str, Dataset],
    shown: dict[str, str],
    options: DataOptions,
    base: Dataset | None = None,
    base_shown: str = "",
    name: str | None = None,
) -> Dataset:
    """One dataset from the split files ``parts`` ({split: dataset}, ``shown`` their names as the user gave
    them) and, optionally, the dataset ``base`` whose splits they replace (see the module docstring)."""
    if base is None and "train" not in parts:
        given = " and ".join(shown[s] for s in parts)
        raise WarmstartError(
            f"{' and '.join(parts)} data given ({given}) but no training data",
            "give the training split too (--train-file FILE, or data={'train': ...}), or a dataset to take "
            "it from (--dataset NAME_OR_DIR)",
        )
    replace = base is not None and (base.has_splits or "train" in parts)
    pool = parts.get("train", base)
    pool_shown = shown["train"] if "train" in parts else base_shown
    kind = base.kind if base is not None else pool.kind
    _check_kinds(kind, pool_shown if base is None else base_shown, parts, shown, options)
    if replace:  # the files replace those splits of the dataset; its own stay

        def read_split(split: str):
            return parts[split].records("all") if split in parts else base.records(split)

        origin = {s: shown[s] if s in parts else f"{base_shown} ({s})" for s in splits.SPLITS}
    else:
        readers_ = {s: part.records for s, part in parts.items() if s != "train"}
        readers_["train"] = pool.records
        validation, test = splits.resolve_fractions(kind, options.validation_fraction, options.test_fraction)
        carve = splits.carving(readers_, options.split_seed, validation, test)

        def read_split(split: str):
            return carve.read(readers_, split)

        fraction = {"validation": carve.validation, "test": carve.test}
        origin = {
            s: shown.get(s, pool_shown)
            if s not in carve.carved
            else f"carved from {pool_shown} by hash ({fraction[s] * 100:g}%, seed {carve.seed})"
            for s in splits.SPLITS
        }
    line = "; ".join(f"{split}: {origin[split]}" for split in splits.SPLITS)
    dataset = Dataset(
        name or pool_shown,
        kind,
        "your own splits (" + ", ".join(f"{s} {shown[s]}" for s in parts) + ")",
        (base or pool).licence,
        "; ".join([f"{s}: {part.source}" for s, part in parts.items()] + ([base.source] if base else [])),
        lambda: (r for s in splits.SPLITS for r in read_split(s)),
        options,
        read_split=read_split,
        read_routed=None if replace else lambda wanted: carve.routed(readers_, wanted),
        split_note=line,
    )
    dataset.origin = line
    return dataset
