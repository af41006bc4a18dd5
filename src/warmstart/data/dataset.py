"""A dataset: its records per split, streamed or kept in memory, with the options that read it (columns,
split seed)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from warmstart.data import splits
from warmstart.errors import WarmstartError

SPLIT_NAMES = (*splits.SPLITS, "all")


@dataclass(frozen=True)
class DataOptions:
    """How to read a dataset: columns of local files / hf datasets, .txt mode, and the hashed split."""

    text_column: str = "text"
    text_pair_column: str | None = None
    label_column: str | None = "label"  # used when the file has it (then 'labeled'); None: never
    empty_labels: bool = False  # multi-label: an empty label is a row none of the labels apply to
    target_column: str | None = None  # text-to-text: a file with this column is a 'seq2seq' dataset
    txt_mode: str = "line"  # .txt: 'line' = one document per line, 'blank' = blank-line-separated paragraphs
    split_seed: int = 0
    validation_fraction: float | None = None  # None: the kind's default (corpus 0.02, labeled 0.1)
    test_fraction: float | None = None  # None: the kind's default (corpus 0.01, labeled 0.1)


class Dataset:
    """A named or local dataset. ``records(split)`` streams; ``counts()`` and ``labels()`` are cached."""

    def __init__(
        self,
        name: str,
        kind: str,
        description: str,
        licence: str,
        source: str,
        read: Callable[[], Iterable[dict]],
        options: DataOptions,
        read_split: Callable[[str], Iterable[dict]] | None = None,
        split_note: str | None = None,
        read_routed: Callable[[tuple[str, ...]], Iterable[tuple[str, dict]]] | None = None,
    ):
        self.name, self.kind, self.description = name, kind, description
        self.licence, self.source = licence, source
        self.options = options
        self.fractions = splits.resolve_fractions(kind, options.validation_fraction, options.test_fraction)
        self.split_note = split_note or splits.describe(options.split_seed, *self.fractions)
        self._read, self._read_split, self._read_routed = read, read_split, read_routed
        self._stats: tuple[dict, Counter, int] | None = None
        self._kept: list[tuple[str, dict]] | None = None  # keep_in_memory(): (split, record), in order
        self.origin: str | None = None  # own splits: where each came from, one line said to the user

    @property
    def has_splits(self) -> bool:
        """Whether the splits are given (official, or the user's own files) rather than hashed from one
        stream of records."""
        return self._read_split is not None

    def __repr__(self) -> str:
        return f"Dataset({self.name!r}, kind={self.kind!r})"

    def records(self, split: str = "all") -> Iterator[dict]:
        """The records of 'train', 'validation', 'test' or 'all', streaming (from memory once kept)."""
        if split not in SPLIT_NAMES:
            raise WarmstartError(f"unknown split '{split}'", f"use one of {', '.join(SPLIT_NAMES)}")
        if self._kept is not None:
            return (dict(r) for part, r in self._kept if split in ("all", part))
        return self._records(split)

    def routed(self, wanted: Iterable[str]) -> Iterator[tuple[str, dict]]:
        """(split, record) of the ``wanted`` splits in one pass: given splits one after the other, a hashed
        split in the order of the records, each record hashed once (data/split_streams.py)."""
        wanted = tuple(wanted)
        if self._kept is not None:
            yield from ((part, dict(r)) for part, r in self._kept if part in wanted)
        elif self._read_routed is not None:  # splits carved from a part: read it once (splits.Carving)
            yield from self._read_routed(wanted)
        elif self._read_split is not None:
            for part in (s for s in splits.SPLITS if s in wanted):
                yield from ((part, r) for r in self._read_split(part))
        else:
            yield from splits.route(self._read(), self.options.split_seed, *self.fractions, wanted)

    def keep_in_memory(self) -> Dataset:
        """Read the data once and serve later reads from memory, in the same order (packaged data read again
        and again: the cells of a study). Each read still gets fresh dicts."""
        if self._kept is None:
            if self._read_split is not None:
                self._kept = [(s, r) for s in splits.SPLITS for r in self._read_split(s)]
            else:
                seed, (validation, test) = self.options.split_seed, self.fractions
                where = splits.record_split
                self._kept = [(where(r, seed, validation, test), r) for r in self._read()]
        return self

    def _records(self, split: str) -> Iterator[dict]:
        if self._read_split is not None:
            parts = splits.SPLITS if split == "all" else (split,)
            for part in parts:
                yield from self._read_split(part)
            return
        yield from splits.filter_split(self._read(), split, self.options.split_seed, *self.fractions)

    def texts(self, split: str = "all") -> Iterator[str]:
        for record in self.records(split):
            yield record["text"]

    def _compute_stats(self) -> tuple[dict, Counter, int]:
        if self._stats is None:
            counts, labels, words = dict.fromkeys(splits.SPLITS, 0), Counter(), 0
            seed, (validation, test) = self.options.split_seed, self.fractions
            parts = splits.SPLITS if self._read_split else (None,)
            for part in parts:
                stream = self._read_split(part) if part else self._read()
                for record in stream:
                    counts[part or splits.record_split(record, seed, validation, test)] += 1
                    words += len(record["text"].split())
                    if "tags" in record:
                        labels.update(t for t in record["tags"] if t != "O")
                    elif "answers" in record:
                        labels["answerable" if record["answers"] else "no answer"] += 1
                    elif "label" in record:
                        labels[str(record["label"])] += 1
            counts["all"] = sum(counts.values())
            self._stats = (counts, labels, words)
        return self._stats

    def counts(self) -> dict[str, int]:
        """Records per split (train, validation, test, all), from one streaming pass."""
        return dict(self._compute_stats()[0])

    def label_counts(self) -> dict[str, int]:
        """Labels (labeled), tags other than O (tagging), answerable or not (qa), right choice (choice)."""
        self._require_labels()
        return dict(sorted(self._compute_stats()[1].items()))

    def labels(self) -> list[str]:
        """The distinct labels, sorted."""
        return list(self.label_counts())

    def words(self) -> int:
        """Whitespace-separated words over all splits (an approximation of the size)."""
        return self._compute_stats()[2]

    def _require_labels(self) -> None:
        if self.kind == "corpus":
            raise WarmstartError(
                f"dataset {self.name} has no labels (it is a corpus)",
                f"use a labeled dataset, or set the label column (now '{self.options.label_column}')",
            )
