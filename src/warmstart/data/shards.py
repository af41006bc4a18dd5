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

import itertools
import json
import os
import queue
import re
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from warmstart.atomic import check_writable
from warmstart.errors import WarmstartError
from warmstart.tokenization.tokenizer import Tokenizer

__all__ = ["FORMAT", "FORMAT_VERSION", "TokenShards", "prepare_shards", "read_meta", "token_dtype"]

FORMAT = "warmstart-token-shards"
FORMAT_VERSION = 1
_PREPARE_FIX = "run `warmstart prepare ...` to tokenize a corpus into shards"
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab_size <= 65535), else uint32."""
    if vocab_size <= 0:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    if vocab_size > 2**32 - 1:
        raise ValueError(f"vocab_size {vocab_size} does not fit in uint32")
    return np.dtype(np.uint16) if vocab_size <= 65535 else np.dtype(np.uint32)


def _batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    it = iter(texts)
    while batch := list(itertools.islice(it, size)):
        yield batch


def _prefetched(batches: Iterator[list[str]], depth: int = 4) -> Iterator[list[str]]:
    """Read the next batches in a thread while the tokenizer (Rust, GIL released) encodes this one."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def produce() -> None:
        try:
            for b in batches:
                if stop.is_set():
                    return
                q.put(b)
            q.put(done)
        except BaseException as e:  # re-raised in the consumer
            q.put(e)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while (item := q.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(0.01)


class _SplitWriter:
    """Appends documents of one split to shard files of at most ``shard_tokens`` tokens each."""

    def __init__(self, directory: Path, split: str, dtype: np.dtype, shard_tokens: int):
        self.directory = directory
        self.split = split
        self.dtype = dtype
        self.shard_tokens = shard_tokens
        self.shards: list[dict] = []  # {"file": name, "num_tokens": n}
        self._fh = None
        self._in_shard = 0
        self.num_tokens = 0
        self.num_docs = 0
        self._docs = open(directory / f"{split}.docs.bin", "wb")

    def _open_next(self) -> None:
        if self._fh is not None:
            self._fh.close()
        name = f"{self.split}-{len(self.shards):05d}.bin"
        self._fh = open(self.directory / name, "wb")
        self.shards.append({"file": name, "num_tokens": 0})
        self._in_shard = 0

    def write_docs(self, docs: list[list[int]], sep: int) -> None:
        lengths = np.fromiter((len(d) + 1 for d in docs), dtype=np.int64, count=len(docs))
        if not len(lengths):
            return
        starts = np.empty_like(lengths)
        starts[0] = 0
        np.cumsum(lengths[:-1], out=starts[1:])
        self._docs.write((starts + self.num_tokens).tobytes())
        flat: list[int] = []
        for d in docs:
            flat.extend(d)
            flat.append(sep)
        tokens = np.asarray(flat, dtype=self.dtype)
        self.num_docs += len(docs)
        pos = 0
        while pos < len(tokens):
            if self._fh is None or self._in_shard >= self.shard_tokens:
                self._open_next()
            take = min(len(tokens) - pos, self.shard_tokens - self._in_shard)
            self._fh.write(tokens[pos : pos + take].tobytes())
            self._in_shard += take
            self.shards[-1]["num_tokens"] += take
            self.num_tokens += take
            pos += take

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._docs.close()


def prepare_shards(
    texts_by_split: dict[str, Iterable[str]],
    tokenizer: Tokenizer,
    out_dir: str | os.PathLike,
    *,
    overwrite: bool = False,
    batch_size: int = 1024,
    shard_tokens: int = 2**28,
    total_bytes: int | None = None,
    source: dict | None = None,
    show_progress: bool = True,
) -> dict:
    """Tokenize each split into memory-mapped shards under ``out_dir``; return the meta dict.

    Streams texts in batches (memory stays flat), skips blank documents and appends ``tokenizer.doc_sep_id``
    after every document. Writes into a temp dir next to ``out_dir`` and renames it into place only when
    complete. ``total_bytes`` (UTF-8 size of all input, if known) gives the progress bar a total.
    """
    out_dir = Path(out_dir)
    if not texts_by_split:
        raise WarmstartError("no splits to prepare", "give at least a train split")
    for split in texts_by_split:
        if not _SPLIT_NAME.match(str(split)):
            raise WarmstartError(f"invalid split name {split!r}", "use letters, digits, '_', '-' or '.'")
    if batch_size < 1 or shard_tokens < 1:
        raise ValueError("batch_size and shard_tokens must be positive")
    if out_dir.exists() and not overwrite:
        raise WarmstartError(
            f"{out_dir} already exists", "pass --overwrite to replace it or choose another --out"
        )
    check_writable(out_dir)
    vocab_size = tokenizer.vocab_size
    dtype = token_dtype(vocab_size)
    sep = int(tokenizer.doc_sep_id)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        splits: dict[str, dict] = {}
        bar = tqdm(
            total=total_bytes,
            unit="B",
            unit_scale=True,
            unit_divisor=1000,
            desc="tokenizing",
            disable=not show_progress,
            dynamic_ncols=True,
        )
        started = time.perf_counter()
        input_bytes = 0
        with bar:
            for split, texts in texts_by_split.items():
                bar.set_description(f"tokenizing {split}")
                writer = _SplitWriter(tmp, split, dtype, int(shard_tokens))
                try:
                    for batch in _prefetched(_batches(texts, batch_size)):
                        nbytes = sum(len(t.encode("utf-8")) for t in batch if t)
                        docs = [t for t in batch if t and not t.isspace()]
                        if docs:
                            writer.write_docs(tokenizer.encode_batch(docs), sep)
                        input_bytes += nbytes
                        bar.update(nbytes)
                        bar.set_postfix_str(
                            f"docs={writer.num_docs:,} tokens={writer.num_tokens:,}", refresh=False
                        )
                finally:
                    writer.close()
                if writer.num_tokens == 0:
                    raise WarmstartError(
                        f"the '{split}' split has no text (0 tokens after skipping blank documents)",
                        "check the corpus and its split settings, or leave that split out",
                    )
                splits[split] = {
                    "num_tokens": writer.num_tokens,
                    "num_docs": writer.num_docs,
                    "docs_file": f"{split}.docs.bin",
                    "shards": writer.shards,
                }
        seconds = time.perf_counter() - started
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "dtype": dtype.name,
            "vocab_size": vocab_size,
            "tokenizer_fingerprint": tokenizer.fingerprint(),
            "tokenizer_kind": tokenizer.kind,
            "doc_sep_id": sep,
            "splits": splits,
            "source": source or {},
            "input_bytes": input_bytes,
            "seconds": round(seconds, 3),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        tokenizer.save(tmp / "tokenizer")
        (tmp / "meta.json").write_text(
            json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        _swap_into_place(tmp, out_dir, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta


def _swap_into_place(tmp: Path, out_dir: Path, overwrite: bool) -> None:
    if not out_dir.exists():
        os.replace(tmp, out_dir)
        return
    if not overwrite:  # appeared while we were working
        raise WarmstartError(
            f"{out_dir} already exists", "pass --overwrite to replace it or choose another --out"
        )
    trash = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    old = trash / "old"
    os.replace(out_dir, old)
    try:
        os.replace(tmp, out_dir)
    except BaseException:
        os.replace(old, out_dir)  # put the previous version back
        raise
    finally:
        shutil.rmtree(trash, ignore_errors=True)


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
