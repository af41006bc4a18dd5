"""Corpora larger than memory: peak resident memory of `warmstart prepare` and `warmstart pretrain`.

The corpus is the packaged wiki-leads + news text (all splits, as `warmstart data` reads them), one document
per line (inner whitespace collapsed), repeated whole until the file reaches ``--size-gb``. A WordPiece
tokenizer of 8,192 tokens is trained once on a slice of it (every 5th document), as the demo trains one on
the full corpus. For each size, `warmstart prepare` and then a short `warmstart pretrain` (bert-tiny, masked
LM, reading those shards) run as child processes; each child's peak is measured two ways:

- ``peak RSS``: the kernel's own high-water mark (ru_maxrss from wait4; all threads, the tokenizer's too);
- ``anon`` / ``file``: the largest RssAnon (heap, arrays, tensors) and RssFile (mapped files: the shared
  libraries, ~85 MB with torch, plus any memory-mapped data pages touched) seen by sampling /proc every
  0.1 s.

Prints a Markdown table and one JSON line per size. Files go to a temp dir and are deleted (``--keep``).

    python benchmarks/corpus_memory.py --size-gb 0.2 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.tokenization.train import train_tokenizer

CORPORA = ["wiki-leads", "news"]
CLI = [sys.executable, "-m", "warmstart"]


def documents() -> list[str]:
    texts = corpus_texts(CORPORA, DataOptions(label_column=None), "all")
    return [line for line in (" ".join(t.split()) for t in texts) if line]


def write_corpus(path: Path, docs: list[str], size: int) -> tuple[int, int]:
    """Repeat ``docs`` (one per line) until the file holds ``size`` bytes; (bytes, repeats) written."""
    block = ("\n".join(docs) + "\n").encode("utf-8")
    written, repeats = 0, 0
    with open(path, "wb") as fh:
        while written < size:
            room = size - written
            part = block if len(block) <= room else block[: block.rfind(b"\n", 0, room) + 1]
            if not part:
                break
            fh.write(part)
            written += len(part)
            repeats += 1
    return written, repeats


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return pids


def _status_kb(pid: int, keys: tuple[str, ...]) -> dict[str, int]:
    out = dict.fromkeys(keys, 0)
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in out:
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def measure(cmd: list[str], log: Path) -> dict:
    """Run ``cmd``; wall seconds and peak memory in MB (kernel high-water mark, sampled anon and file)."""
    peaks = {"RssAnon": 0, "RssFile": 0}
    done = threading.Event()
    with open(log, "w") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)

        def sample() -> None:
            while not done.is_set():
                total = dict.fromkeys(peaks, 0)
                for p in _tree(proc.pid):
                    for k, v in _status_kb(p, tuple(peaks)).items():
                        total[k] += v
                for k in peaks:
                    peaks[k] = max(peaks[k], total[k])
                done.wait(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {proc.returncode}); see {log}:\n{log.read_text()[-3000:]}")
    mb = 1024.0
    return {
        "seconds": round(wall, 1),
        "peak_rss_mb": round(usage.ru_maxrss / mb, 1),
        "peak_anon_mb": round(peaks["RssAnon"] / mb, 1),
        "peak_file_mb": round(peaks["RssFile"] / mb, 1),
    }


def run_size(size_gb: float, docs: list[str], tokenizer: Path, work: Path, args) -> dict:
    tag = f"{size_gb:g}gb"
    corpus, shards, run = work / f"corpus-{tag}.txt", work / f"shards-{tag}", work / f"run-{tag}"
    nbytes, repeats = write_corpus(corpus, docs, int(size_gb * 1e9))
    prep = measure(
        [*CLI, "prepare", "--corpus", str(corpus), "--tokenizer", str(tokenizer), "--out", str(shards)],
        work / f"prepare-{tag}.log",
    )
    meta = json.loads((shards / "meta.json").read_text())
    tokens = sum(s["num_tokens"] for s in meta["splits"].values())
    train_tokens = meta["splits"]["train"]["num_tokens"]
    flags = (
        f"--preset bert-tiny --steps {args.steps} --seq-len 128 --batch-size {args.batch_size} "
        f"train.eval_every={args.steps} train.save_every={args.steps} train.eval_batches=5 "
        "train.progress=false train.log_every=10"
    )
    train = measure(
        [*CLI, "pretrain", "--shards", str(shards), "--out", str(run), *flags.split()],
        work / f"pretrain-{tag}.log",
    )
    if not args.keep:
        shutil.rmtree(shards), shutil.rmtree(run), corpus.unlink()
    return {
        "size_gb": round(nbytes / 1e9, 3),
        "repeats": repeats,
        "tokens": tokens,
        "train_windows": train_tokens // 126,
        "prepare": prep | {"mb_per_s": round(nbytes / 1e6 / prep["seconds"], 2)},
        "pretrain": train | {"steps": args.steps, "batch_size": args.batch_size},
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| corpus | tokens | prepare | prepare MB/s | prepare peak RSS (anon) | pretrain | "
        "pretrain peak RSS (anon / file) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p, t = r["prepare"], r["pretrain"]
        cells = [
            f"{r['size_gb']:g} GB",
            f"{r['tokens'] / 1e6:,.0f}M",
            f"{p['seconds']:.0f} s",
            f"{p['mb_per_s']:.1f}",
            f"{p['peak_rss_mb']:.0f} MB ({p['peak_anon_mb']:.0f})",
            f"{t['seconds']:.0f} s ({t['steps']} steps)",
            f"{t['peak_rss_mb']:.0f} MB ({t['peak_anon_mb']:.0f} / {t['peak_file_mb']:.0f})",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-gb", type=float, nargs="+", default=[0.2, 2.0], help="corpus sizes in GB")
    ap.add_argument("--steps", type=int, default=60, help="pretraining steps per size")
    ap.add_argument("--batch-size", type=int, default=32, help="pretraining micro-batch (seq 128)")
    ap.add_argument("--dir", help="work directory (default: a new temp dir under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep corpora, shards and runs")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="corpus-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    docs = documents()
    block = sum(len(d.encode()) + 1 for d in docs)
    print(
        f"corpus: packaged wiki-leads + news (all splits, {len(docs):,} documents, {block / 1e6:.1f} MB), "
        f"one document per line, repeated to each size; work dir {work}",
        flush=True,
    )
    tokenizer = work / "tokenizer"
    train_tokenizer(docs[::5], "wordpiece", 8192, tokenizer, show_progress=False, overwrite=True)
    rows = []
    try:
        for size in args.size_gb:
            rows.append(run_size(size, docs, tokenizer, work, args))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows))


if __name__ == "__main__":
    main()
