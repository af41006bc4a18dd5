"""A quoted file pattern as one dataset: ``--train-file 'data/part-*.csv'``, ``--corpus 'docs/*.txt'``, as
``datasets``' ``data_files`` takes a pattern. The matching files (sorted by name, ``**`` reaching into
folders) are read one after another as one file would be, so a hashed split, a fingerprint and a resumed run
see them as one; files of different kinds (a corpus beside a labelled table) are refused in one line, and so
is a pattern that matches nothing."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from warmstart.data.dataset import DataOptions, Dataset
from warmstart.errors import WarmstartError


def is_pattern(name: str) -> bool:
    """Whether ``name`` is a file pattern (``*``, ``?`` or ``[...]``) rather than a file that exists."""
    return glob.has_magic(name) and not Path(name).exists()


def matches(pattern: str, root: str = "") -> list[str]:
    """The files ``pattern`` matches (``~`` expanded, ``**`` reaching into folders), sorted by name; a
    relative pattern read from ``root`` when one is given."""
    found = glob.glob(os.path.join(root, os.path.expanduser(pattern)), recursive=True)
    return sorted(p for p in found if Path(p).is_file())


def globbed(pattern: str, options: DataOptions, open_file: Callable[[str, DataOptions], Dataset]) -> Dataset:
    """The files matching ``pattern`` as one dataset, each read by ``open_file`` (the catalog's reader of a
    local file)."""
    paths = matches(pattern)
    if not paths:
        raise WarmstartError(
            f"no file matches {pattern}",
            "check the pattern (quote it so that warmstart expands it: 'data/*.csv')",
        )
    parts = [open_file(p, options) for p in paths]
    kinds = {part.kind for part in parts}
    if len(kinds) > 1:
        described = ", ".join(f"{Path(p).name} ({part.kind})" for p, part in list(zip(paths, parts))[:6])
        raise WarmstartError(
            f"the files matching {pattern} are not of one kind: {described}",
            "match files with the same columns (a labelled table has its label column in each)",
        )
    if len(parts) == 1:
        return parts[0]

    def read() -> Iterator[dict]:
        for part in parts:
            yield from part.records("all")

    first = parts[0]
    return Dataset(
        pattern,
        first.kind,
        f"{len(parts):,} files matching {pattern} ({first.description})",
        first.licence,
        ";".join(str(Path(p).resolve()) for p in paths),
        read,
        options,
    )
