"""The splits of corpora read in one pass: ``split_streams(datasets, wanted)`` gives one lazy stream of
texts per split, as ``warmstart prepare`` reads them (train, then validation, then test).

The first stream read walks the corpora once, hashing each document once (data/splits.py); the texts of the
other wanted splits met on the way are written to unnamed temporary files (``tempfile.TemporaryFile``: the
system frees them when they are closed or the process dies, even by kill -9) and read back from there when
their stream is read. Before, each split read and hashed the whole corpus again: three passes where one does.
Memory stays flat; the temporary files hold the held-out splits only (3% of a corpus by default). A stream
read before the first pass has finished (or after a first stream that stopped early) reads the corpora
itself, as each split did before, so the streams give the same texts in any order.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

LENGTH = 8  # bytes of each text's length before it in a temporary file


class SplitStreams:
    """Per-split streams of the texts of ``datasets`` (catalog Datasets), sharing one reading pass."""

    def __init__(self, datasets: list, wanted: tuple[str, ...]):
        self.datasets, self.wanted = datasets, tuple(wanted)
        self._begun = False
        self._kept: dict[str, BinaryIO] = {}  # the other splits of a finished pass

    def texts(self, split: str) -> Iterator[str]:
        """The texts of ``split`` in order: from the shared pass when it is the first stream read, from its
        temporary file once that pass has finished, else from the corpora."""
        if split in self._kept:
            yield from _read_back(self._kept.pop(split))
        elif not self._begun:
            self._begun = True
            yield from self._pass(split)
        else:
            yield from itertools.chain.from_iterable(d.texts(split) for d in self.datasets)

    def _pass(self, split: str) -> Iterator[str]:
        files = {s: tempfile.TemporaryFile() for s in self.wanted if s != split}
        for d in self.datasets:
            for part, record in d.routed(self.wanted):
                if part == split:
                    yield record["text"]
                else:
                    data = record["text"].encode("utf-8", "surrogatepass")
                    files[part].write(len(data).to_bytes(LENGTH, "little") + data)
        self._kept.update(files)  # only a whole pass: a stream stopped early leaves its files unused


def _read_back(fh: BinaryIO) -> Iterator[str]:
    with fh:
        fh.seek(0)
        while head := fh.read(LENGTH):
            yield fh.read(int.from_bytes(head, "little")).decode("utf-8", "surrogatepass")


def split_streams(datasets: list, wanted) -> dict[str, Iterator[str]]:
    """{split: its stream of texts} for the ``wanted`` splits of ``datasets`` (module docstring)."""
    shared = SplitStreams(datasets, tuple(wanted))
    return {split: shared.texts(split) for split in shared.wanted}
