"""Token shards: the memory-mapped on-disk form of a tokenized corpus.

Layout of a shards directory::

    meta.json                 format, dtype, vocab size, tokenizer fingerprint/kind, doc_sep_id, split counts
    tokenizer/                a copy of the tokenizer (tokenizer.json, tokenizer_config.json, ...)
    train-00000.bin ...       flat token ids (uint16 or uint32), documents separated by ``doc_sep_id``
    train.docs.bin            int64 start offset of every document, global across the split's shards

Every document is followed by ``doc_sep_id``, so a packed training window is just a contiguous slice of the
split's token stream, possibly crossing a shard-file boundary (:meth:`TokenShards.read` handles that).

The shard files are plain arrays that ``np.memmap`` can open, but :meth:`TokenShards.read` fetches tokens
with ``os.pread``: a memory map keeps every page it touched (and the kernel maps 64 KB around each random
read) in the process's resident set, which then grows toward the shards' size over a long run. With
``pread`` those pages stay in the OS page cache only, and the process's memory stays flat at any corpus size.
"""

from __future__ import annotations

import copy
import json
import os
import weakref
from pathlib import Path

import numpy as np

from warmstart.errors import WarmstartError
from warmstart.tokenization.tokenizer import Tokenizer

FORMAT = "warmstart-token-shards"
FORMAT_VERSION = 1
_PREPARE_FIX = "run `warmstart prepare ...` to tokenize a corpus into shards"


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab_size <= 65535), else uint32."""
    if vocab_size <= 0:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    if vocab_size > 2**32 - 1:
        raise ValueError(f"vocab_size {vocab_size} does not fit in uint32")
    return np.dtype(np.uint16) if vocab_size <= 65535 else np.dtype(np.uint32)


def read_meta(directory: str | os.PathLike) -> dict:
    """The meta.json of a shards directory; WarmstartError when it is missing or not a shards directory."""
    directory = Path(directory)
    path = directory / "meta.json"
    if not path.is_file():
        raise WarmstartError(f"no token shards at {directory} (meta.json is missing)", _PREPARE_FIX)
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WarmstartError(f"{path} is not valid JSON ({exc})", _PREPARE_FIX) from exc
    if meta.get("format") != FORMAT:
        raise WarmstartError(f"{directory} is not a warmstart token-shards directory", _PREPARE_FIX)
    if meta.get("format_version", 0) > FORMAT_VERSION:
        raise WarmstartError(
            f"{directory} was written by a newer warmstart (format {meta.get('format_version')})",
            "upgrade warmstart or prepare the shards again",
        )
    return meta


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


class TokenShards:
    """Read-only view of one split: a flat token stream over the shard files (read with ``os.pread``)."""

    def __init__(self, directory: Path, split: str, meta: dict):
        info = meta["splits"][split]
        self.directory = directory
        self.split = split
        self.meta = meta
        self.dtype = np.dtype(meta["dtype"])
        self.vocab_size = int(meta["vocab_size"])
        self.fingerprint = meta["tokenizer_fingerprint"]
        self.tokenizer_kind = meta.get("tokenizer_kind")
        self.doc_sep_id = int(meta["doc_sep_id"])
        self.num_tokens = int(info["num_tokens"])
        self.num_docs = int(info["num_docs"])
        sizes: list[int] = []
        for shard in info["shards"]:
            path = directory / shard["file"]
            sizes.append(int(shard["num_tokens"]))
            if not path.is_file() or path.stat().st_size != sizes[-1] * self.dtype.itemsize:
                raise WarmstartError(f"shard file {path} is missing or truncated", _PREPARE_FIX)
        self._paths = [directory / shard["file"] for shard in info["shards"]]
        self._fds = [os.open(path, os.O_RDONLY) for path in self._paths]
        weakref.finalize(self, _close_all, list(self._fds))
        # _bounds[i] = global offset of shard i's first token; _bounds[-1] = num_tokens
        self._bounds = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self._bounds[1:])
        if int(self._bounds[-1]) != self.num_tokens:
            raise WarmstartError(f"{directory}: shard sizes disagree with meta.json", _PREPARE_FIX)
        docs_path = directory / info.get("docs_file", f"{split}.docs.bin")
        if not docs_path.is_file() or docs_path.stat().st_size != self.num_docs * 8:
            raise WarmstartError(f"document index {docs_path} is missing or truncated", _PREPARE_FIX)
        self.doc_offsets = (
            np.memmap(docs_path, dtype=np.int64, mode="r", shape=(self.num_docs,))
            if self.num_docs
            else np.zeros(0, dtype=np.int64)
        )

    @classmethod
    def open(cls, directory: str | os.PathLike, split: str = "train") -> TokenShards:
        directory = Path(directory)
        meta = read_meta(directory)
        if split not in meta.get("splits", {}):
            have = ", ".join(meta.get("splits", {})) or "none"
            raise WarmstartError(
                f"{directory} has no '{split}' split (it has: {have})", f"{_PREPARE_FIX} with that split"
            )
        return cls(directory, split, meta)

    @staticmethod
    def splits(directory: str | os.PathLike) -> list[str]:
        return list(read_meta(directory)["splits"])

    def __len__(self) -> int:
        return self.num_tokens

    def __repr__(self) -> str:
        return (
            f"TokenShards({str(self.directory)!r}, split={self.split!r}, tokens={self.num_tokens}, "
            f"docs={self.num_docs}, shards={len(self._fds)}, dtype={self.dtype.name})"
        )

    @property
    def num_shards(self) -> int:
        return len(self._fds)

    def head(self, n: int) -> TokenShards:
        """The first ``n`` tokens of the split as a split of their own (``data.max_tokens``): reads past them
        are refused, and its documents are those that start before token ``n`` (the last one cut there).
        ``n`` at or above the split's size: the whole split."""
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        view = copy.copy(self)
        view._whole = self  # the view reads through this object's open files: keep them open
        view.num_tokens = min(int(n), self.num_tokens)
        view.num_docs = int(np.searchsorted(self.doc_offsets, view.num_tokens, side="left"))
        view.doc_offsets = self.doc_offsets[: view.num_docs]
        return view

    def read(self, start: int, length: int) -> np.ndarray:
        """Tokens [start, start + length) of the split as int64, across shard-file boundaries."""
        start, length = int(start), int(length)
        if start < 0 or length < 0 or start + length > self.num_tokens:
            raise IndexError(f"range [{start}, {start + length}) is outside 0..{self.num_tokens}")
        out = np.empty(length, dtype=self.dtype)
        i = int(np.searchsorted(self._bounds, start, side="right")) - 1
        pos, filled, item = start, 0, self.dtype.itemsize
        while filled < length:
            local = pos - int(self._bounds[i])
            take = min(length - filled, int(self._bounds[i + 1]) - pos)
            out[filled : filled + take] = np.frombuffer(self._pread(i, take * item, local * item), self.dtype)
            filled += take
            pos += take
            i += 1
        return out.astype(np.int64)

    def _pread(self, shard: int, size: int, offset: int) -> bytes:
        parts, got = [], 0
        while got < size:  # a single read returns at most ~2 GB on Linux
            parts.append(os.pread(self._fds[shard], size - got, offset + got))
            if not parts[-1]:
                raise WarmstartError(f"shard file {self._paths[shard]} is truncated", _PREPARE_FIX)
            got += len(parts[-1])
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def doc_range(self, index: int) -> tuple[int, int]:
        """(start, end) of document ``index`` in the token stream, excluding its trailing doc separator."""
        if not 0 <= index < self.num_docs:
            raise IndexError(f"document {index} is outside 0..{self.num_docs - 1}")
        start = int(self.doc_offsets[index])
        nxt = int(self.doc_offsets[index + 1]) if index + 1 < self.num_docs else self.num_tokens
        return start, nxt - 1

    def doc(self, index: int) -> np.ndarray:
        """The tokens of document ``index`` (without its separator)."""
        start, end = self.doc_range(index)
        return self.read(start, end - start)

    def tokenizer(self) -> Tokenizer:
        """The tokenizer the shards were made with (the copy under ``tokenizer/``)."""
        return Tokenizer.load(self.directory / "tokenizer")

    def check_tokenizer(self, tokenizer: Tokenizer) -> None:
        """WarmstartError when ``tokenizer`` is not the one these shards were tokenized with."""
        if tokenizer.fingerprint() != self.fingerprint:
            raise WarmstartError(
                f"the tokenizer (fingerprint {tokenizer.fingerprint()}) differs from the one used for "
                f"{self.directory} ({self.fingerprint})",
                f"use {self.directory / 'tokenizer'} or prepare the shards again with this tokenizer",
            )
