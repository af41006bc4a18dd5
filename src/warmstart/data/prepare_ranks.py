"""`warmstart prepare` started by torchrun: the processes share the tokenizing and write one shard set.

``torchrun --nnodes N --nproc_per_node K -m warmstart prepare ...``: every process reads the whole corpus in
the same order (the split of a document is decided by its text, data/splits.py, and exact duplicates are
dropped by each process alike, data/dedupe.py) and cuts it into the same batches of ``batch_size``
documents; process ``r`` of ``W`` tokenizes batches ``r, r + W, r + 2W, ...``, into partial files of its
own. Process 0 then copies the batches back in their order into one shard set with one meta.json, the same
bytes one process writes (which process tokenized a batch changes nothing), and removes the partial files.
Reading is not shared, tokenizing is: it pays while tokenizing costs more than reading (JSON parsing).

All processes write under one temporary directory that process 0 makes next to ``--out``: the output
directory must be on a filesystem every machine sees at the same path (NFS, Lustre, a shared disk).
Nothing is moved into ``--out`` before every process finished: a process that fails, is stopped (SIGTERM)
or loses its peers makes process 0 remove the temporary directory, partial files included, and ``--out``
is left as it was (a process 0 killed outright leaves it to the next prepare's clean-up, as one process
does). Each process holds its own hashes for ``--dedupe``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from warmstart.data.batch_pipeline import batches, prefetched
from warmstart.data.shard_writer import SplitWriter, StopOnSignal, check_out, finish, split_entry, temp_prefix
from warmstart.data.shards import token_dtype
from warmstart.errors import WarmstartError

TIMEOUT = timedelta(hours=6)  # how long a process waits for the slowest one (or for process 0's copying)


def world() -> tuple[int, int]:
    """(rank, number of processes) torchrun gave this process; (0, 1) when not started by torchrun."""
    try:
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1


class _Group:
    """torchrun's processes, joined over gloo (objects only: no tensors on a device)."""

    def __init__(self) -> None:
        import torch.distributed as dist

        self.dist, self.owned = dist, not dist.is_initialized()
        if self.owned:
            try:
                dist.init_process_group("gloo", timeout=TIMEOUT)
            except (RuntimeError, ValueError) as exc:
                raise WarmstartError(
                    f"could not join the other torchrun processes ({str(exc).splitlines()[0]})",
                    "check torchrun's --nnodes/--node_rank/--master_addr/--master_port (or --rdzv_endpoint)",
                ) from None
            self.group = None
        else:  # a group another part made (maybe NCCL): objects go over a gloo group of their own
            self.group = dist.new_group(backend="gloo", timeout=TIMEOUT)
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def from_first(self, value):
        """Process 0's ``value``, on every process."""
        box = [value]
        self.dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]

    def everyone(self, value) -> list:
        """Every process's ``value``, by rank."""
        out = [None] * self.size
        self.dist.all_gather_object(out, value, group=self.group)
        return out

    def close(self) -> None:
        """After success on every process: wait for all, then leave the group this module joined."""
        self.dist.barrier(group=self.group)
        if self.owned:
            self.dist.destroy_process_group()


def _report(exc: BaseException) -> tuple[str, str, str | None]:
    """An error in a form every process can rebuild."""
    if isinstance(exc, WarmstartError):
        return ("warmstart", exc.problem, exc.fix)
    return ("other", f"{type(exc).__name__}: {exc}", None)


def _rebuild(report: tuple[str, str, str | None], rank: int) -> Exception:
    kind, problem, fix = report
    if kind == "warmstart":
        return WarmstartError(problem, fix)
    return RuntimeError(f"process {rank} of the prepare failed: {problem}")


def _raise_first(reports: list) -> None:
    for rank, report in enumerate(reports):
        if report is not None:
            raise _rebuild(report, rank)


def prepare(
    texts_by_split, tokenizer, out_dir: Path, source, dropped, *, overwrite, batch_size, shard_tokens
):
    """``prepare_shards`` on every torchrun process: the meta dict of the one shard set written."""
    group = _Group()
    started = time.perf_counter()
    tmp, refusal = None, None
    if group.rank == 0:
        try:
            check_out(texts_by_split, out_dir, overwrite, batch_size, shard_tokens)
            out_dir.parent.mkdir(parents=True, exist_ok=True)
            tmp = os.path.abspath(tempfile.mkdtemp(prefix=temp_prefix(out_dir, "tmp"), dir=out_dir.parent))
        except Exception as exc:
            refusal = _report(exc)
    tmp, refusal = group.from_first((tmp, refusal))
    _raise_first([refusal])
    tmp = Path(tmp)
    signals = StopOnSignal(out_dir).install()
    try:
        try:
            mine = _tokenize_share(tmp / "parts", group, texts_by_split, tokenizer, batch_size)
            failed = None
        except Exception as exc:  # told to every process, so all stop with the same line
            mine, failed = {}, _report(exc)
        reports = group.everyone((mine, failed))
        _raise_first([r[1] for r in reports])
        outcome = None
        if group.rank == 0:
            try:
                nbytes = sum(sum(r[0].values()) for r in reports) + (dropped.dropped_bytes if dropped else 0)
                splits = _assemble(tmp, group.size, list(texts_by_split), tokenizer, shard_tokens)
                outcome = (
                    finish(tmp, out_dir, overwrite, tokenizer, splits, source, nbytes, started, dropped),
                    None,
                )
            except Exception as exc:
                outcome = (None, _report(exc))
        meta, failed = group.from_first(outcome)
        _raise_first([failed])
    except BaseException:
        if group.rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        signals.restore()
    group.close()
    return meta


def _part(parts: Path, split: str, rank: int, what: str) -> Path:
    return parts / f"{split}.rank{rank:05d}.{what}"


def _tokenize_share(parts: Path, group: _Group, texts_by_split: dict, tokenizer, batch_size: int) -> dict:
    """Tokenize this process's batches of every split into its partial files: {split: UTF-8 bytes read}."""
    parts.mkdir(exist_ok=True)
    rank, size = group.rank, group.size
    dtype, sep = token_dtype(tokenizer.vocab_size), int(tokenizer.doc_sep_id)
    read: dict[str, int] = {}
    bar = tqdm(unit="B", unit_scale=True, unit_divisor=1000, disable=rank != 0, dynamic_ncols=True)
    with bar:
        for split, texts in texts_by_split.items():
            bar.set_description(f"tokenizing {split} (process 0 of {size})")
            read[split] = 0
            files = [open(_part(parts, split, rank, what), "wb") for what in ("tokens", "lengths", "batches")]
            with files[0] as tokens, files[1] as lengths, files[2] as counts:
                for k, batch in enumerate(prefetched(batches(texts, batch_size))):
                    if k % size != rank:
                        continue
                    nbytes = sum(len(t.encode("utf-8")) for t in batch if t)
                    docs = [t for t in batch if t and not t.isspace()]
                    encoded = tokenizer.encode_batch(docs) if docs else []
                    flat = [t for ids in encoded for t in (*ids, sep)]
                    tokens.write(np.asarray(flat, dtype=dtype).tobytes())
                    lengths.write(np.array([len(ids) + 1 for ids in encoded], dtype=np.int64).tobytes())
                    counts.write(np.int64(len(encoded)).tobytes())
                    read[split] += nbytes
                    bar.update(nbytes)
    return read


def _read(fh, dtype: np.dtype, count: int) -> np.ndarray:
    data = fh.read(count * dtype.itemsize)
    if len(data) != count * dtype.itemsize:
        raise RuntimeError(f"a partial file ended early: {fh.name}")
    return np.frombuffer(data, dtype=dtype)


def _assemble(tmp: Path, size: int, split_names: list[str], tokenizer, shard_tokens: int) -> dict:
    """Process 0: every split's batches copied from the partial files in their order; the partial files
    removed. Returns {split: meta entry}."""
    parts, dtype = tmp / "parts", token_dtype(tokenizer.vocab_size)
    entries = {}
    for split in split_names:
        counts = [np.fromfile(_part(parts, split, r, "batches"), dtype=np.int64) for r in range(size)]
        handles = [
            (open(_part(parts, split, r, "tokens"), "rb"), open(_part(parts, split, r, "lengths"), "rb"))
            for r in range(size)
        ]
        writer = SplitWriter(tmp, split, dtype, int(shard_tokens))
        try:
            for k in range(sum(len(c) for c in counts)):
                rank, index = k % size, k // size
                tokens, lengths = handles[rank]
                docs = _read(lengths, np.dtype(np.int64), int(counts[rank][index]))
                writer.write_tokens(_read(tokens, dtype, int(docs.sum())), docs)
        finally:
            writer.close()
            for pair in handles:
                for fh in pair:
                    fh.close()
        entries[split] = split_entry(writer)
    shutil.rmtree(parts)
    return entries
