"""Exact duplicate documents dropped while a corpus is prepared (``warmstart prepare --dedupe``).

A document is a duplicate when its text, stripped of leading and trailing whitespace, has the same 128-bit
blake2b hash of its UTF-8 bytes as an earlier document; the first copy is kept. Splits are read in order
(train, validation, test) and share one set of hashes, so a validation or test document that repeats a
training document is dropped from the held-out split and training keeps its copy: held-out text never
repeats a training document. (The hashed split, data/splits.py, puts equal texts in the same split anyway;
texts repeated across splits come from splits given as they are: a hub dataset's, a folder of split files.)

Memory: one hash per distinct document kept, about 100 bytes each in a Python set (1 GB per 10 million
documents).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

METHOD = "blake2b (128-bit) of the UTF-8 text, stripped; first copy kept; splits in order share the hashes"


def text_hash(text: str) -> bytes:
    """The key of a document: 16 bytes of blake2b over its stripped UTF-8 text."""
    return hashlib.blake2b(text.strip().encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Dedupe:
    """Filters the texts of each split in turn (``texts(split, stream)``), counting what it drops."""

    def __init__(self) -> None:
        self._earlier: set[bytes] = set()  # hashes of the splits already read
        self._current: set[bytes] = set()
        self._split: str | None = None
        self.dropped: dict[str, int] = {}  # per split, all duplicates dropped
        self.in_earlier: dict[str, int] = {}  # of those, copies of a document of an earlier split
        self.dropped_bytes = 0  # UTF-8 size of the documents dropped

    def _start(self, split: str) -> None:
        if split != self._split:
            self._earlier |= self._current
            self._current = set()
            self._split = split
            self.dropped.setdefault(split, 0)
            self.in_earlier.setdefault(split, 0)

    def texts(self, split: str, texts: Iterable[str]) -> Iterator[str]:
        """``texts`` without the duplicates of any document seen before (blank texts pass through)."""
        self._start(split)
        for text in texts:
            if not text or text.isspace():
                yield text
                continue
            key = text_hash(text)
            if key in self._current or key in self._earlier:
                self.dropped[split] += 1
                self.in_earlier[split] += key in self._earlier
                self.dropped_bytes += len(text.encode("utf-8", "surrogatepass"))
                continue
            self._current.add(key)
            yield text

    @property
    def total(self) -> int:
        return sum(self.dropped.values())

    def summary(self) -> dict:
        """What the shard set's meta.json records under ``dedupe``."""
        return {
            "method": METHOD,
            "dropped": sum(self.dropped.values()),
            "dropped_per_split": dict(self.dropped),
            "copies_of_earlier_splits": dict(self.in_earlier),
        }


def describe(summary: dict) -> str:
    """One line for the user: how many duplicates were dropped, per split."""
    parts = []
    for split, n in summary["dropped_per_split"].items():
        earlier = summary["copies_of_earlier_splits"].get(split, 0)
        parts.append(
            f"{split} {n:,}" + (f" ({earlier:,} of them copies of an earlier split's)" if earlier else "")
        )
    return f"dropped {summary['dropped']:,} exact duplicate documents: " + ", ".join(parts)
