"""Skip-gram and CBOW with negative sampling, trained with plain SGD by a compiled kernel (kernel.py).

Skip-gram maximises, for each (context c, centre w) pair, the lectures' objective
``log sigma(u_w . v_c) + sum_k log sigma(-u_nk . v_c)`` over ``negative`` noise words n_k drawn from the
unigram distribution to the power 0.75, with separate input vectors v (init uniform(-0.5/dim, 0.5/dim)) and
output vectors u (init 0), as word2vec.c. CBOW replaces v_c by h, the mean (or sum) of the context input
vectors. A negative equal to the word being predicted is skipped (it adds nothing to the loss or the
gradient), as word2vec.c and gensim skip it. As in word2vec.c (and gensim's cbow_mean), CBOW adds the whole
gradient step of h to every context word, also in mean mode. Skip-gram shares a window's negatives among
its context words and steps the output rows once per window (Ji et al. 2016; kernel.py).

Examples are made per chunk of the corpus by array operations (batches.py). ``threads`` worker threads take
chunks in turn and update the shared matrices without locks (Hogwild, like word2vec.c and gensim); the
kernel runs without the GIL. The learning rate falls linearly from ``lr`` to ``min_lr`` over all epochs, by
the position of each centre word in the corpus.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.word2vec.batches import NoiseSampler, chunk_bounds, make_examples
from warmstart.word2vec.kernel import cbow_chunk, skipgram_chunk
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.vocab import Vocab

MODELS = ("skipgram", "cbow")
CHUNK_WORDS = 20_000  # corpus ids per chunk of work
LOSS_EVERY = 16  # centre words between two loss readings


@dataclass
class Word2VecConfig:
    model: str = opt("skipgram", "skipgram (a word predicts its context) or cbow (the context predicts it)")
    dim: int = opt(100, "vector dimensions")
    window: int = opt(5, "largest context window; each centre word draws its window size from 1..window")
    negative: int = opt(5, "noise words per positive example")
    sample: float = opt(1e-3, "frequent-word subsampling threshold (0 keeps every word)")
    min_count: int = opt(5, "words seen fewer times are dropped")
    max_vocab: int | None = opt(None, "keep only the N most frequent words (None: all)")
    epochs: int = opt(5, "passes over the corpus")
    lr: float | None = opt(
        None, "starting learning rate (None: 0.025 for skipgram, 0.05 for cbow, as word2vec.c)"
    )
    min_lr: float = opt(1e-4, "learning rate at the end of training (linear decay)")
    cbow_mean: bool = opt(True, "CBOW: average the context vectors (False: sum them)")
    seed: int = opt(1, "random seed (runs repeat exactly with threads=1)")
    threads: int = opt(0, "worker threads (0: one per CPU core)")

    def __post_init__(self):
        if self.model not in MODELS:
            raise WarmstartError(
                f"unknown word2vec model '{self.model}'", f"choose one of {', '.join(MODELS)}"
            )
        for name in ("dim", "window", "negative", "epochs"):
            if getattr(self, name) < 1:
                raise WarmstartError(f"word2vec {name} must be at least 1", f"set word2vec.{name}=1 or more")
        if self.threads < 0:
            raise WarmstartError(
                "word2vec threads cannot be negative", "set word2vec.threads=0 (one per core)"
            )
        for name in ("sample", "min_lr", "min_count"):
            if not getattr(self, name) >= 0:
                raise WarmstartError(f"word2vec {name} cannot be negative", f"set word2vec.{name}=0 or more")
        if self.lr is not None and not self.lr > 0:
            raise WarmstartError(f"word2vec lr must be above 0, got {self.lr}", "e.g. word2vec.lr=0.025")

    @property
    def start_lr(self) -> float:
        return self.lr if self.lr is not None else (0.05 if self.model == "cbow" else 0.025)


def train(
    docs: list[list[str]],
    cfg: Word2VecConfig | None = None,
    progress: bool = True,
    vocab: Vocab | None = None,
) -> tuple[WordVectors, dict]:
    """Train word vectors on documents (word lists). Returns the input vectors and training figures:
    ``words_per_second`` counts corpus words (every word of ``docs``, before the vocabulary filter and
    subsampling) times epochs, over ``seconds``, the time from encoding the corpus to the end of the last
    epoch (building the vocabulary, ``vocab_seconds``, is not included); ``loss`` is the mean loss per
    example over the last epoch (``epoch_losses``: per epoch), measured on every LOSS_EVERY-th centre word;
    ``compile_seconds`` is the kernel's compilation (or loading it from numba's cache), not counted."""
    from tqdm.auto import tqdm

    cfg = cfg or Word2VecConfig()
    start = time.perf_counter()
    vocab = vocab or Vocab.build(docs, cfg.min_count, cfg.max_vocab)
    compiled = time.perf_counter()
    _warm_up()
    begin = time.perf_counter()
    ids, offsets, raw, doc = _encoded(docs, vocab)
    bounds = chunk_bounds(offsets, CHUNK_WORDS)
    keep, noise = vocab.keep_probs(cfg.sample), NoiseSampler(vocab.noise_distribution())
    gen = torch.Generator().manual_seed(cfg.seed)
    syn0 = (torch.rand(len(vocab), cfg.dim, generator=gen) - 0.5) / cfg.dim
    syn1 = torch.zeros(len(vocab), cfg.dim)

    tasks = iter([(e, k) for e in range(cfg.epochs) for k in range(len(bounds) - 1)])
    lock, errors, stop = threading.Lock(), [], threading.Event()
    loss_sum, loss_n = np.zeros(cfg.epochs), np.zeros(cfg.epochs)
    counted = {"words": 0, "examples": 0}
    total = cfg.epochs * len(ids)
    bar = tqdm(total=cfg.epochs * int(raw[-1]), unit="word", unit_scale=True, disable=not progress)
    bar.set_description(f"word2vec {cfg.model}")

    def work():
        try:
            while not stop.is_set() and (task := _next(tasks, lock)) is not None:
                e, k = task
                lo, hi = offsets[bounds[k]], offsets[bounds[k + 1]]
                seed = int(np.random.SeedSequence([cfg.seed, e, k]).generate_state(1)[0])
                ex = make_examples(ids[lo:hi], doc[lo:hi], lo, keep, noise, cfg.window, cfg.negative, seed)
                loss, measured = _kernel(syn0, syn1, ex, cfg, e * len(ids), total)
                with lock:
                    loss_sum[e] += loss
                    loss_n[e] += measured
                    counted["words"] += ex.kept
                    counted["examples"] += ex.pairs if cfg.model == "skipgram" else len(ex)
                    bar.update(int(raw[bounds[k + 1]] - raw[bounds[k]]))
        except BaseException as err:  # noqa: B036 - handed to the main thread
            errors.append(err)
            stop.set()

    threads = cfg.threads or os.cpu_count() or 1
    try:
        _in_threads(work, threads)
    finally:
        stop.set()
        bar.close()
    if errors:
        raise errors[0]
    seconds = time.perf_counter() - begin
    stats = _figures(cfg, len(vocab), int(raw[-1]), counted, loss_sum / np.maximum(loss_n, 1), seconds)
    stats.update(vocab_seconds=compiled - start, compile_seconds=begin - compiled, threads=threads)
    return WordVectors(list(vocab.words), syn0.numpy(), vocab.counts.copy()), stats


def _warm_up() -> None:
    """Compile the kernels (or load them from numba's cache) on a one-word chunk, outside any timing."""
    one = np.zeros((1, 4), np.float32)
    ex = make_examples(
        np.zeros(2, np.int64), np.zeros(2, np.int32), 0, np.ones(1), NoiseSampler(np.ones(1)), 1, 1, 0
    )
    args = (ex.inputs, ex.starts, ex.words, ex.negatives, ex.position, 0.0, 0.0, 0.0, 1.0, 1)
    skipgram_chunk(one, one.copy(), *args)
    cbow_chunk(one, one.copy(), *args, True)


def _figures(cfg, vocab_size: int, corpus_words: int, counted: dict, epoch_losses, seconds: float) -> dict:
    return {
        "model": cfg.model,
        "vocab_size": vocab_size,
        "corpus_words": corpus_words,
        "training_words": counted["words"],
        "examples": counted["examples"],
        "seconds": seconds,
        "words_per_second": cfg.epochs * corpus_words / seconds,
        "loss": float(epoch_losses[-1]),
        "epoch_losses": [float(x) for x in epoch_losses],
    }


def _kernel(syn0: torch.Tensor, syn1: torch.Tensor, ex, cfg: Word2VecConfig, done: int, total: int):
    """(summed loss, examples measured) of one chunk's SGD steps, in place on the shared matrices."""
    args = (syn0.numpy(), syn1.numpy(), ex.inputs, ex.starts, ex.words, ex.negatives, ex.position)
    schedule = (float(cfg.start_lr), float(cfg.min_lr), float(done), float(total), LOSS_EVERY)
    if cfg.model == "skipgram":
        return skipgram_chunk(*args, *schedule)
    return cbow_chunk(*args, *schedule, cfg.cbow_mean)


def _encoded(docs: list[list[str]], vocab: Vocab):
    """(word ids, document offsets into them, offsets in corpus words, the document of each id)."""
    ids, offsets = vocab.encode(docs)
    if len(ids) == 0:
        raise WarmstartError(
            "no word of the corpus is in the vocabulary", "build the vocabulary from this corpus"
        )
    raw = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, docs), dtype=np.int64, count=len(docs)), out=raw[1:])
    doc = np.repeat(np.arange(len(docs), dtype=np.int32), np.diff(offsets))
    return ids, offsets, raw, doc


def _in_threads(work, threads: int) -> None:
    """Run ``work`` on ``threads`` threads (this one included), torch on one thread each meanwhile."""
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        workers = [threading.Thread(target=work, daemon=True) for _ in range(threads - 1)]
        for w in workers:
            w.start()
        work()
        for w in workers:
            w.join()
    finally:
        torch.set_num_threads(torch_threads)


def _next(tasks, lock):
    with lock:
        return next(tasks, None)
