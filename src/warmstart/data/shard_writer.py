"""Write token shards: tokenize a corpus split by split into memory-mapped files, atomically (a temporary
directory renamed into place when complete).

The temporary directory, ``.<out>.tmp-<pid>@<host>-<random>`` next to ``<out>``, is removed on any error, on
Ctrl-C and on SIGTERM/SIGHUP (caught while shards are written, then the command exits with 128 + the signal
number and ``<out>`` is not written). A process killed outright (SIGKILL, power loss) cannot clean up: the
next prepare into the same ``<out>`` removes the temporary directories of processes of this host that are no
longer running (``.<out>.tmp-<pid>`` without a host counts as this host's; directories of another host, of
a running process, or named otherwise are left alone), and if such a process was replacing an existing
``<out>`` and had moved it aside (``.<out>.old-<pid>@<host>-<random>/old``), puts the previous version back
first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from warmstart.atomic import check_writable
from warmstart.data.batch_pipeline import batches, encoded_in_order, prefetched
from warmstart.data.dedupe import Dedupe
from warmstart.data.shards import FORMAT, FORMAT_VERSION, token_dtype
from warmstart.errors import Stopped, WarmstartError
from warmstart.outputs import mark, refuse_foreign
from warmstart.tokenization.tokenizer import Tokenizer

_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class SplitWriter:
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
        flat: list[int] = []
        for d in docs:
            flat.extend(d)
            flat.append(sep)
        self.write_tokens(np.asarray(flat, dtype=self.dtype), lengths)

    def write_tokens(self, tokens: np.ndarray, lengths: np.ndarray) -> None:
        """Append documents given as one array of their tokens (each ending in the separator) and their
        lengths (``lengths.sum() == len(tokens)``)."""
        if not len(lengths):
            return
        starts = np.empty_like(lengths)
        starts[0] = 0
        np.cumsum(lengths[:-1], out=starts[1:])
        self._docs.write((starts + self.num_tokens).tobytes())
        self.num_docs += len(lengths)
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


def check_out(
    texts_by_split: dict, out_dir: Path, overwrite: bool, batch_size: int, shard_tokens: int
) -> None:
    """Refuse, before any work: no splits, a bad split name, an existing ``out_dir`` without ``overwrite``,
    or one warmstart did not make with it."""
    if not texts_by_split:
        raise WarmstartError("no splits to prepare", "give at least a train split")
    for split in texts_by_split:
        if not _SPLIT_NAME.match(str(split)):
            raise WarmstartError(f"invalid split name {split!r}", "use letters, digits, '_', '-' or '.'")
    if batch_size < 1 or shard_tokens < 1:
        raise ValueError("batch_size and shard_tokens must be positive")
    remove_stale(out_dir)
    if out_dir.exists() and not overwrite:
        raise WarmstartError(
            f"{out_dir} already exists", "pass --overwrite to replace it or choose another --out"
        )
    refuse_foreign(out_dir)  # --overwrite replaces only shards (or another directory) warmstart made
    check_writable(out_dir)


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
    dedupe: bool = False,
    among_processes: bool = False,
) -> dict:
    """Tokenize each split into memory-mapped shards under ``out_dir``; return the meta dict.

    Streams texts in batches (memory stays flat), skips blank documents and appends ``tokenizer.doc_sep_id``
    after every document. Writes into a temp dir next to ``out_dir`` and renames it into place only when
    complete. ``total_bytes`` (UTF-8 size of all input, if known) gives the progress bar a total.
    ``dedupe``: exact duplicate documents are dropped (data/dedupe.py; meta's ``dedupe`` says how many).
    ``among_processes``: started by torchrun (WORLD_SIZE > 1), the processes share the tokenizing and
    write one shard set, the same as one process writes (data/prepare_ranks.py).
    """
    out_dir = Path(out_dir)
    texts_by_split, dropped = _deduped(texts_by_split, dedupe)
    if among_processes:
        from warmstart.data import prepare_ranks

        if prepare_ranks.world()[1] > 1:
            kwargs = {"overwrite": overwrite, "batch_size": batch_size, "shard_tokens": shard_tokens}
            return prepare_ranks.prepare(texts_by_split, tokenizer, out_dir, source, dropped, **kwargs)
    check_out(texts_by_split, out_dir, overwrite, batch_size, shard_tokens)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(out_dir, "tmp"), dir=out_dir.parent))
    signals = StopOnSignal(out_dir).install()
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
                splits[split], nbytes = _tokenize_split(
                    tmp, split, texts, tokenizer, bar, batch_size, shard_tokens
                )
                input_bytes += nbytes
        input_bytes += dropped.dropped_bytes if dropped else 0
        meta = finish(tmp, out_dir, overwrite, tokenizer, splits, source, input_bytes, started, dropped)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        signals.restore()
    return meta


def _deduped(texts_by_split: dict, dedupe: bool):
    """(the splits' texts, the Dedupe that filters them or None)."""
    if not dedupe:
        return texts_by_split, None
    dropped = Dedupe()
    return {split: dropped.texts(split, texts) for split, texts in texts_by_split.items()}, dropped


def finish(tmp, out_dir, overwrite, tokenizer, splits, source, input_bytes, started, dropped) -> dict:
    """Write meta.json, the tokenizer and the marker into ``tmp`` (shards written) and move it into place."""
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dtype": token_dtype(tokenizer.vocab_size).name,
        "vocab_size": tokenizer.vocab_size,
        "tokenizer_fingerprint": tokenizer.fingerprint(),
        "tokenizer_kind": tokenizer.algorithm,
        "doc_sep_id": int(tokenizer.doc_sep_id),
        "splits": splits,
        "source": source or {},
        "input_bytes": input_bytes,
        "seconds": round(time.perf_counter() - started, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if dropped is not None:
        meta["dedupe"] = dropped.summary()
        for split, entry in splits.items():
            entry["duplicates_dropped"] = dropped.dropped.get(split, 0)
    tokenizer.save(tmp / "tokenizer")
    mark(tmp, "shards")
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _swap_into_place(tmp, out_dir, overwrite)
    return meta


def _tokenize_split(tmp: Path, split: str, texts, tokenizer, bar, batch_size: int, shard_tokens: int):
    """Write one split's shards under ``tmp``: (its meta entry, the UTF-8 bytes read)."""
    bar.set_postfix_str("docs=0 tokens=0", refresh=False)  # not the last split's counts under this one's name
    bar.set_description(f"tokenizing {split}")
    writer = SplitWriter(tmp, split, token_dtype(tokenizer.vocab_size), int(shard_tokens))
    sep, input_bytes = int(tokenizer.doc_sep_id), 0
    try:
        for nbytes, ids in encoded_in_order(prefetched(batches(texts, batch_size)), tokenizer):
            if ids:
                writer.write_docs(ids, sep)
            input_bytes += nbytes
            bar.update(nbytes)
            bar.set_postfix_str(f"docs={writer.num_docs:,} tokens={writer.num_tokens:,}", refresh=False)
    finally:
        writer.close()
    return split_entry(writer), input_bytes


def split_entry(writer: SplitWriter) -> dict:
    """A written split's meta entry; a split without tokens is an error."""
    if writer.num_tokens == 0:
        raise WarmstartError(
            f"the '{writer.split}' split has no text (0 tokens after skipping blank documents)",
            "check the corpus and its split settings, or leave that split out (a file of a labeled set's "
            "training texts holds no text that hashes to the held-out splits: pass --split-seed 1)",
        )
    return {
        "num_tokens": writer.num_tokens,
        "num_docs": writer.num_docs,
        "docs_file": f"{writer.split}.docs.bin",
        "shards": writer.shards,
    }


def _swap_into_place(tmp: Path, out_dir: Path, overwrite: bool) -> None:
    if not out_dir.exists():
        os.replace(tmp, out_dir)
        return
    if not overwrite:  # appeared while we were working
        raise WarmstartError(
            f"{out_dir} already exists", "pass --overwrite to replace it or choose another --out"
        )
    trash = Path(tempfile.mkdtemp(prefix=temp_prefix(out_dir, "old"), dir=out_dir.parent))
    old = trash / "old"
    os.replace(out_dir, old)
    try:
        os.replace(tmp, out_dir)
    except BaseException:
        os.replace(old, out_dir)  # put the previous version back
        raise
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname())[:64] or "host"


def temp_prefix(out_dir: Path, purpose: str) -> str:
    """``.<out>.<purpose>-<pid>@<host>-``: tells a later prepare whose temporary directory it is."""
    return f".{out_dir.name}.{purpose}-{os.getpid()}@{_host()}-"


def _running(pid: int) -> bool:
    if pid <= 0:
        return True  # not a pid we can ask about: keep its directory
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs under another user
        return True
    return True


def remove_stale(out_dir: str | os.PathLike) -> list[Path]:
    """Remove the temporary directories that prepares into ``out_dir`` killed outright left beside it
    (their process, on this host, no longer runs), first putting back a previous ``out_dir`` that such a
    process had moved aside to replace it. Returns the directories removed."""
    out_dir = Path(out_dir)
    if not out_dir.parent.is_dir():
        return []
    # .<out>.tmp-<pid>@<host>-<random>; a name without @<host> (.<out>.tmp-<pid>) counts as this host's
    pattern = re.compile(rf"^\.{re.escape(out_dir.name)}\.(tmp|old)-(\d+)(?:@(.+?))?(?:-[a-z0-9_]+)?$")
    removed, host = [], _host()
    for entry in sorted(out_dir.parent.iterdir()):
        match = pattern.match(entry.name)
        if not match or match.group(3) not in (None, host) or not entry.is_dir():
            continue
        if _running(int(match.group(2))):
            continue
        old = entry / "old"
        if match.group(1) == "old" and old.is_dir() and not out_dir.exists():
            os.replace(old, out_dir)  # the swap was cut between its two renames
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


class StopOnSignal:
    """While shards are written, SIGTERM and SIGHUP raise ``Stopped`` (so the temporary directory is removed
    and the CLI exits 128 + the signal number) instead of killing the process on the spot. Only signals left
    at their default action are caught (``nohup``'s ignored SIGHUP stays ignored), from the main thread."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self._previous: dict = {}

    def install(self) -> StopOnSignal:
        if threading.current_thread() is not threading.main_thread():
            return self
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
                self._previous[signum] = signal.signal(signum, self._raise)
        return self

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _raise(self, signum, frame) -> None:
        self.restore()  # a second signal acts at once
        name = signal.Signals(signum).name
        raise Stopped(
            signum, f"stopped by {name}: {self.out_dir} was not written (its temporary files were removed)"
        )
