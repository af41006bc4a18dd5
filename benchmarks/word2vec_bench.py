"""word2vec training: warmstart vs gensim (C), side by side in one process, skip-gram and CBOW.

Same corpus (the train split of wiki-leads + news, as `warmstart word2vec train` reads it), same
hyperparameters (100 dimensions, window 5, 5 negatives, sample 1e-4, min_count 5, 5 epochs, 2 threads,
learning rate 0.025 for skip-gram and 0.05 for CBOW as in word2vec.c, decaying linearly to 1e-4; gensim's
own default would be 0.025 for both), the two libraries run one after the other, never at once.

words/s = epochs x corpus words (every word of the documents, before the vocabulary filter and subsampling)
/ training seconds. Training seconds exclude building the vocabulary for both: gensim's ``train()`` call,
and warmstart's ``train()`` from encoding the corpus as ids to the end of the last epoch (the encoding is
counted because gensim looks words up during training). The vectors of both are scored by the same code:
analogy accuracy (3CosAdd, questions-words.txt, search among the 30k most frequent words) and Spearman's
rho on wordsim353. With ``--seeds 1,2,3`` each library trains once per seed, alternating: words/s is taken
from the median time, the scores are the mean over seeds (with their range), since one seed's analogy
score moves by about a point. The JSON line also records, per run, CPU seconds used by other processes
during it (the machine may be shared; a clean run has ~0).

    python benchmarks/word2vec_bench.py                # the full comparison, about a minute
    python benchmarks/word2vec_bench.py --seeds 1,2,3  # 3 seeds each, a few minutes
    python benchmarks/word2vec_bench.py --quick        # 1 epoch on 2,000 documents, a smoke run
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import time

import numpy as np
import torch

from warmstart.word2vec.train import Word2VecConfig, train
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.words import corpus_documents

CORPUS = ["wiki-leads", "news"]


def _cpu_seconds() -> tuple[float, float]:
    """(this process's CPU seconds, the whole machine's busy CPU seconds; nan off Linux)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    try:
        with open("/proc/stat") as f:
            ticks = f.readline().split()[1:4]
        busy = sum(map(int, ticks)) / os.sysconf("SC_CLK_TCK")
    except OSError:
        busy = float("nan")
    return use.ru_utime + use.ru_stime, busy


def run_warmstart(docs, model: str, args, seed: int) -> tuple[WordVectors, float]:
    cfg = Word2VecConfig(model=model, sample=args.sample, epochs=args.epochs, threads=args.threads, seed=seed)
    wv, stats = train(docs, cfg, progress=False)
    return wv, stats["seconds"]


def run_gensim(docs, model: str, args, seed: int) -> tuple[WordVectors, float]:
    from gensim.models import Word2Vec

    ours = Word2VecConfig(model=model)  # gensim's own default alpha is 0.025 for CBOW too: pass ours
    m = Word2Vec(
        alpha=ours.start_lr,
        min_alpha=ours.min_lr,
        vector_size=100,
        window=5,
        negative=5,
        hs=0,
        sample=args.sample,
        min_count=5,
        workers=args.threads,
        sg=int(model == "skipgram"),
        seed=seed,
    )
    m.build_vocab(docs)
    start = time.perf_counter()
    m.train(docs, total_examples=m.corpus_count, epochs=args.epochs)
    seconds = time.perf_counter() - start
    words = list(m.wv.index_to_key)
    counts = np.array([m.wv.get_vecattr(w, "count") for w in words])
    return WordVectors(words, m.wv.vectors, counts), seconds


def score(wv: WordVectors, scorer: str) -> tuple[float, float]:
    """(analogy accuracy among the 30k most frequent words, wordsim353 Spearman rho)."""
    if scorer == "warmstart":
        from warmstart.word2vec import evaluate

        return evaluate.analogy(wv, restrict=30000).accuracy, evaluate.similarity(wv).spearman
    from gensim.models import KeyedVectors
    from gensim.test.utils import datapath

    kv = KeyedVectors(wv.dim)
    kv.add_vectors(wv.words, wv.vectors)
    accuracy = kv.evaluate_word_analogies(datapath("questions-words.txt"), restrict_vocab=30000)[0]
    return accuracy, kv.evaluate_word_pairs(datapath("wordsim353.tsv"))[1].statistic


def _spread(row: dict, key: str, scale: float, digits: int) -> str:
    """The mean over seeds, with the range when there are several: "7.38 (7.2-7.5)"."""
    low, high = (scale * x for x in row[key + "_range"])
    mean = f"{scale * row[key]:.{digits + 1}f}"
    return mean if low == high else f"{mean} ({low:.{digits}f}-{high:.{digits}f})"


def machine() -> dict:
    import gensim

    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "gensim": gensim.__version__,
        "numpy": np.__version__,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1 epoch on the first 2,000 documents")
    p.add_argument("--models", nargs="+", default=["skipgram", "cbow"], choices=["skipgram", "cbow"])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seeds", default="1", help="comma-separated seeds: one timed, scored run each")
    p.add_argument(
        "--scorer",
        choices=["warmstart", "gensim"],
        default="warmstart",
        help="score both models with warmstart.word2vec.evaluate or with gensim's KeyedVectors.evaluate_*",
    )
    args = p.parse_args()
    docs = corpus_documents(CORPUS, "train")
    if args.quick:
        docs, args.epochs = docs[:2000], 1
    words = sum(map(len, docs))
    seeds = [int(x) for x in args.seeds.split(",")]
    rows = {}
    for seed in seeds:  # the two libraries alternate, so machine drift hits both
        for model in args.models:
            for library, run in (("gensim", run_gensim), ("warmstart", run_warmstart)):
                own0, busy0 = _cpu_seconds()
                wv, seconds = run(docs, model, args, seed)
                own1, busy1 = _cpu_seconds()
                row = rows.setdefault((model, library), {"model": model, "library": library, "trials": []})
                analogy, wordsim = score(wv, args.scorer)
                row["vocab"] = len(wv)
                row["trials"].append(
                    {
                        "seed": seed,
                        "seconds": seconds,
                        "others_cpu_seconds": (busy1 - busy0) - (own1 - own0),
                        "analogy": analogy,
                        "wordsim353": wordsim,
                    }
                )
                print(f"{model} {library} seed {seed}: {args.epochs * words / seconds:,.0f} words/s, "
                      f"analogy {100 * analogy:.2f}%, wordsim353 {wordsim:.3f}", flush=True)  # fmt: skip
    rows = list(rows.values())
    for r in rows:
        r["seconds"] = statistics.median(t["seconds"] for t in r["trials"])
        r["words_per_second"] = args.epochs * words / r["seconds"]
        for key in ("analogy", "wordsim353"):
            values = [t[key] for t in r["trials"]]
            r[key], r[key + "_range"] = statistics.mean(values), [min(values), max(values)]
    print()
    print("| model | library | words/s | vs gensim | train s | vocab | analogy (top 30k) | wordsim353 rho |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        base = next(g for g in rows if g["model"] == r["model"] and g["library"] == "gensim")
        print(
            f"| {r['model']} | {r['library']} | {r['words_per_second']:,.0f} "
            f"| {r['words_per_second'] / base['words_per_second']:.2f}x | {r['seconds']:.1f} "
            f"| {r['vocab']:,} "
            f"| {_spread(r, 'analogy', 100, 1)}% | {_spread(r, 'wordsim353', 1, 3)} |"
        )
    settings = {
        "corpus": CORPUS,
        "documents": len(docs),
        "corpus_words": words,
        "dim": 100,
        "window": 5,
        "negative": 5,
        "sample": args.sample,
        "min_count": 5,
        "epochs": args.epochs,
        "threads": args.threads,
        "seeds": seeds,
        "scorer": args.scorer,
        "words_per_second": "epochs x corpus words / training seconds (vocabulary building excluded)",
    }
    record = {
        "benchmark": "word2vec",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "settings": settings,
        "rows": rows,
    }
    print()
    print(json.dumps(record))


if __name__ == "__main__":
    main()
