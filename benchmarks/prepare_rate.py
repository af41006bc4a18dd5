"""Corpus preparation against the tokenizer's own speed: `warmstart prepare` beside the `tokenizers`
library's ``encode_batch`` over the same file, side by side in one run.

The corpus is the packaged wiki-leads + news text, one document per line, repeated to ``--size-mb`` (as
benchmarks/corpus_memory.py builds it); the tokenizer is the demo's: WordPiece, 8,192 tokens, trained once
on every 5th document. Each row runs in a child process:

- ``tokenizers, 1 core`` and ``tokenizers, all cores``: the file read line by line, batches of 1,024
  documents given to ``tokenizers.Tokenizer.encode_batch_fast`` (no special tokens: what prepare writes),
  with RAYON_NUM_THREADS=1 or the number of cores this process may use; tokens counted as prepare counts
  them (a separator per document). The time covers reading and encoding: what a bare loop over the file costs.
- ``warmstart prepare``: the command as a user runs it (reading, the hashed split, tokenizing, writing
  shards); tokens from its meta.json, its time from meta.json's ``seconds`` (tokenizing and writing, not
  Python's start-up) and, in brackets, the child's wall time.
- ``--dedupe`` adds a row with exact-duplicate dropping on (past 17.4 MB the corpus repeats itself, so
  that row drops the repeats and tokenizes one copy: compare its time, not its tokens); ``--torchrun K`` a
  row with ``torchrun --standalone --nproc_per_node K -m warmstart prepare`` (one machine, K processes).

``--repeat N`` (default 3) runs the rows in turn N times (ABAB..., so a machine that slows down or speeds up
meanwhile weighs on every row alike) and gives each row's median run, every run's seconds beside it.

Prints a Markdown table and one JSON line. Files go to a temp dir and are deleted (``--keep``).

    python benchmarks/prepare_rate.py                      # 104 MB
    python benchmarks/prepare_rate.py --size-mb 1000 --torchrun 2 --dedupe
    python benchmarks/prepare_rate.py --quick              # 2 MB: checks that it runs, not for figures
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus_memory import documents, write_corpus

from warmstart.tokenization.train import train_tokenizer

CLI = [sys.executable, "-m", "warmstart"]
BATCH = 1024  # prepare_shards' batch size


def encode_only(corpus: Path, tokenizer: Path) -> dict:
    """The `tokenizers` library alone over ``corpus``: {tokens, documents, seconds} (run in a child)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
    tokens = docs = 0
    started = time.perf_counter()
    with open(corpus, encoding="utf-8") as fh:
        while True:
            batch = [line for line in (fh.readline() for _ in range(BATCH)) if line]
            if not batch:
                break
            texts = [t for t in (line.strip() for line in batch) if t]
            for e in encode(texts, add_special_tokens=False):
                tokens += len(e.ids) + 1
            docs += len(texts)
    return {"tokens": tokens, "documents": docs, "seconds": round(time.perf_counter() - started, 3)}


def child(cmd: list[str], env: dict | None = None) -> tuple[str, float]:
    """(stdout, wall seconds) of a child process; its failure ends the benchmark with its stderr."""
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout, time.perf_counter() - started


def tokenizers_row(name: str, corpus: Path, tokenizer: Path, threads: str | None) -> dict:
    env = {"RAYON_NUM_THREADS": threads or str(len(os.sched_getaffinity(0)))}
    out, wall = child([sys.executable, __file__, "--encode-only", str(corpus), str(tokenizer)], env)
    row = json.loads(out.strip().splitlines()[-1])
    return {"row": name, **row, "wall": round(wall, 1)}


def prepare_row(name: str, corpus: Path, tokenizer: Path, out: Path, extra: list[str], procs: int) -> dict:
    args = ["prepare", "--corpus", str(corpus), "--tokenizer", str(tokenizer), "--out", str(out), *extra]
    cmd = [*CLI, *args]
    if procs:
        torchrun = str(Path(sys.executable).with_name("torchrun"))
        cmd = [torchrun, "--standalone", "--nproc_per_node", str(procs), "-m", "warmstart", *args]
    _, wall = child(cmd)
    meta = json.loads((out / "meta.json").read_text())
    shutil.rmtree(out)
    tokens = sum(s["num_tokens"] for s in meta["splits"].values())
    documents = sum(s["num_docs"] for s in meta["splits"].values())
    return {
        "row": name,
        "tokens": tokens,
        "documents": documents,
        "seconds": meta["seconds"],
        "wall": round(wall, 1),
    }


def median(runs) -> dict:
    """The run of median seconds, with every run's seconds under ``runs``."""
    ranked = sorted(runs, key=lambda r: r["seconds"])
    return {**ranked[(len(ranked) - 1) // 2], "runs": [r["seconds"] for r in runs]}


def table(rows: list[dict], best: float) -> str:
    lines = [
        "| row | tokens | seconds (wall) | every run (s) | tokens/s | of tokenizers, all cores |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        rate = r["tokens"] / r["seconds"]
        cells = [
            r["row"],
            f"{r['tokens']:,}",
            f"{r['seconds']:.1f} ({r['wall']:.1f})",
            ", ".join(f"{x:.1f}" for x in r["runs"]),
            f"{rate:,.0f}",
            f"{rate / best:.0%}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=104.0, help="corpus size in MB")
    ap.add_argument("--quick", action="store_true", help="a 2 MB corpus: checks that the script runs")
    ap.add_argument("--dedupe", action="store_true", help="add a row: warmstart prepare --dedupe")
    ap.add_argument("--torchrun", type=int, default=0, metavar="K", help="add a row: prepare on K processes")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each row, in turn (median shown)")
    ap.add_argument("--dir", help="work directory (default: a new temp dir under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the corpus and the tokenizer")
    ap.add_argument("--encode-only", nargs=2, metavar=("CORPUS", "TOKENIZER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.encode_only:
        print(json.dumps(encode_only(Path(args.encode_only[0]), Path(args.encode_only[1]))))
        return
    size = 2.0 if args.quick else args.size_mb
    work = Path(args.dir or tempfile.mkdtemp(prefix="prepare-rate-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        docs = documents()
        corpus, tokenizer = work / "corpus.txt", work / "tokenizer"
        nbytes, _ = write_corpus(corpus, docs, int(size * 1e6))
        train_tokenizer(docs[::5], "wordpiece", 8192, tokenizer, show_progress=False, overwrite=True)
        cores = len(os.sched_getaffinity(0))
        print(
            f"corpus: {nbytes / 1e6:.1f} MB, wiki-leads + news repeated; {cores} cores; work dir {work}",
            flush=True,
        )
        shards = work / "shards"
        runs = [
            lambda: tokenizers_row(f"tokenizers encode_batch, all {cores} cores", corpus, tokenizer, None),
            lambda: prepare_row("warmstart prepare", corpus, tokenizer, shards, [], 0),
        ]
        if args.dedupe:
            runs.append(
                lambda: prepare_row("warmstart prepare --dedupe", corpus, tokenizer, shards, ["--dedupe"], 0)
            )
        if args.torchrun:
            name = f"torchrun --nproc_per_node {args.torchrun} warmstart prepare"
            runs.append(lambda: prepare_row(name, corpus, tokenizer, shards, [], args.torchrun))
        one_core = tokenizers_row("tokenizers encode_batch, 1 core", corpus, tokenizer, "1")
        rows = [median([one_core]), *map(median, zip(*[[run() for run in runs] for _ in range(args.repeat)]))]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    best = rows[1]["tokens"] / rows[1]["seconds"]
    print(table(rows, best))
    for r in rows:
        r["tokens_per_s"] = round(r["tokens"] / r["seconds"])
        r["of_tokenizers_all_cores"] = round(r["tokens_per_s"] / best, 4)
    print(
        json.dumps(
            {"benchmark": "prepare_rate", "corpus_mb": round(nbytes / 1e6, 1), "cores": cores, "rows": rows}
        )
    )


if __name__ == "__main__":
    main()
