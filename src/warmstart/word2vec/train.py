"""Skip-gram and CBOW with negative sampling, trained with plain SGD on PyTorch tensors, no autograd.

Skip-gram maximises, for each (centre c, context o) pair, the lectures' objective
``log sigma(u_o . v_c) + sum_k log sigma(-u_wk . v_c)`` over ``negative`` noise words w_k drawn from the
unigram distribution to the power 0.75, with separate input vectors v (init uniform(-0.5/dim, 0.5/dim)) and
output vectors u (init 0), as word2vec.c. CBOW replaces v_c by h, the mean (or sum) of the context input
vectors, and predicts the centre word. A negative equal to the word being predicted is skipped (it adds
nothing to the loss or the gradient), as word2vec.c and gensim skip it. As in word2vec.c (and gensim's
cbow_mean), CBOW adds the whole gradient step of h to every context word, also in mean mode.

Examples are made in corpus order by array operations (see batches.py) and trained in batches of
``batch`` examples: each batch gathers its rows, computes the gradient of the sigmoid loss by hand and
adds the steps back with ``index_add_`` (duplicates in a batch add up, as sequential SGD steps would to
first order). ``threads`` worker threads take chunks of the corpus in turn and update the shared matrices
without locks (Hogwild, like word2vec.c and gensim). The learning rate falls linearly from ``lr`` to
``min_lr`` over all epochs, by the position of each batch in the corpus.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.word2vec.batches import Examples, NoiseSampler, chunk_bounds, make_examples
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.vocab import Vocab

MODELS = ("skipgram", "cbow")
CHUNK_WORDS = 20_000  # corpus ids per chunk of work
LOSS_EVERY = 16  # batches between two loss readings


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
    batch: int = opt(512, "examples per SGD step (steps of a word's duplicates add up: >4096 can diverge)")
    threads: int = opt(0, "worker threads (0: one per CPU core)")

    def __post_init__(self):
        if self.model not in MODELS:
            raise WarmstartError(
                f"unknown word2vec model '{self.model}'", f"choose one of {', '.join(MODELS)}"
            )
        for name in ("dim", "window", "negative", "epochs", "batch"):
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


def sgns_loss(v_c: torch.Tensor, u_o: torch.Tensor, u_neg: torch.Tensor, valid=None) -> torch.Tensor:
    """Per-example loss, the negative of ``log sigma(u_o . v_c) + sum_k log sigma(-u_neg_k . v_c)``.
    Shapes: v_c, u_o (B, dim); u_neg (B, K, dim); ``valid`` (B, K) weights the negatives (0 = skipped)."""
    pos = F.logsigmoid((u_o * v_c).sum(-1))
    neg = F.logsigmoid(-(u_neg * v_c.unsqueeze(1)).sum(-1))
    if valid is not None:
        neg = neg * valid
    return -(pos + neg.sum(-1))


class Batch:
    """One batch's input vectors h (n, dim) and target vectors u (n, width, dim), with the views and outputs
    the SGD step uses, made once and reused batch after batch (fresh ones cost ~10% more per step)."""

    def __init__(self, h: torch.Tensor, u: torch.Tensor):
        n, width, dim = u.shape
        self.h, self.u, self.h_row, self.u_t = h, u, h.unsqueeze(1), u.transpose(1, 2)
        self.u_flat = u.view(n * width, dim)
        self.s = torch.empty(n, 1, width)  # scores, then the gradient factors g in place
        self.g, self.g_col = self.s.view(n, width), self.s.view(n, width, 1)
        self.dh, self.du = torch.empty(n, 1, dim), torch.empty(n, width, dim)
        self.dh_flat, self.du_flat = self.dh.view(n, dim), self.du.view(n * width, dim)
        self.label = torch.zeros(width)
        self.label[0] = 1.0

    @classmethod
    def empty(cls, n: int, width: int, dim: int) -> Batch:
        return cls(torch.empty(n, dim), torch.empty(n, width, dim))


def sgd_steps(b: Batch, valid: torch.Tensor, lr: float, with_loss: bool = False):
    """SGD steps for the batch ``b`` (column 0 of ``b.u`` the word to predict, the others negatives):
    ``b.dh_flat = -lr * dL/dh`` and ``b.du = -lr * dL/du`` for L the summed ``sgns_loss`` with ``valid``
    (n, width; column 0 is 1, a negative equal to the word to predict 0). Returns L when ``with_loss``."""
    torch.bmm(b.h_row, b.u_t, out=b.s)  # the dot products; bmm beats (u * h).sum(-1) here
    loss = float(sgns_loss_from_scores(b.g, valid).sum()) if with_loss else None
    b.g.sigmoid_().sub_(b.label).mul_(valid).mul_(-lr)  # -lr * dL/ds, dL/ds = sigmoid(s) - label
    torch.bmm(b.s, b.u, out=b.dh)
    torch.mul(b.g_col, b.h_row, out=b.du)
    return loss


def sgns_loss_from_scores(s: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    return -(F.logsigmoid(s[:, 0]) + (F.logsigmoid(-s[:, 1:]) * valid[:, 1:]).sum(1))


class Stepper:
    """SGD steps on one chunk's examples at a time, in place on the shared matrices (one per thread)."""

    def __init__(self, syn0: torch.Tensor, syn1: torch.Tensor, cfg: Word2VecConfig):
        self.syn0, self.syn1, self.mean, self.size = syn0, syn1, cfg.cbow_mean, cfg.batch
        self.full = Batch.empty(cfg.batch, cfg.negative + 1, cfg.dim)

    def load(self, ex: Examples) -> None:
        self.ex, self.inputs = ex, torch.from_numpy(ex.inputs)
        self.targets, self.valid = torch.from_numpy(ex.targets), torch.from_numpy(ex.valid)

    def step(self, lo: int, hi: int, lr: float, with_loss: bool) -> float | None:
        """One SGD step on examples lo:hi of the loaded chunk; the summed loss when ``with_loss``."""
        n, targets = hi - lo, self.targets[lo:hi].view(-1)
        b = self.full if n == self.size else Batch.empty(n, *self.full.u.shape[1:])
        torch.index_select(self.syn1, 0, targets, out=b.u_flat)
        starts = self.ex.starts
        if starts is None:  # skip-gram: one input word per example
            inputs = self.inputs[lo:hi]
            torch.index_select(self.syn0, 0, inputs, out=b.h)
        else:  # CBOW: a bag of context words per example
            inputs = self.inputs[starts[lo] : starts[hi]]
            offsets = torch.from_numpy(starts[lo:hi] - starts[lo])
            b.h.copy_(F.embedding_bag(inputs, self.syn0, offsets, mode="mean" if self.mean else "sum"))
        loss = sgd_steps(b, self.valid[lo:hi], lr, with_loss)
        self.syn1.index_add_(0, targets, b.du_flat)
        dh = b.dh_flat
        if starts is not None:  # every context word gets the step of h (as word2vec.c)
            dh = dh.repeat_interleave(torch.from_numpy(np.diff(starts[lo : hi + 1])), dim=0)
        self.syn0.index_add_(0, inputs, dh)
        return loss


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
    example over the last epoch (``epoch_losses``: per epoch), measured on every LOSS_EVERY-th batch."""
    from tqdm.auto import tqdm

    cfg = cfg or Word2VecConfig()
    start = time.perf_counter()
    vocab = vocab or Vocab.build(docs, cfg.min_count, cfg.max_vocab)
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
    total, lr0 = cfg.epochs * len(ids), cfg.start_lr
    bar = tqdm(total=cfg.epochs * int(raw[-1]), unit="word", unit_scale=True, disable=not progress)
    bar.set_description(f"word2vec {cfg.model}")

    def work():
        stepper = Stepper(syn0, syn1, cfg)
        try:
            while not stop.is_set() and (task := _next(tasks, lock)) is not None:
                e, k = task
                lo, hi = offsets[bounds[k]], offsets[bounds[k + 1]]
                rng = np.random.default_rng([cfg.seed, e, k])
                args = (keep, noise, cfg.window, cfg.negative, cfg.model == "cbow", rng)
                ex = make_examples(ids[lo:hi], doc[lo:hi], lo, *args)
                stepper.load(ex)
                for n, a in enumerate(range(0, len(ex), cfg.batch)):
                    lr = lr0 - (lr0 - cfg.min_lr) * float(e * len(ids) + ex.position[a]) / total
                    b = min(a + cfg.batch, len(ex))
                    loss = stepper.step(a, b, lr, n % LOSS_EVERY == 0)
                    if loss is not None:
                        with lock:
                            loss_sum[e] += loss
                            loss_n[e] += b - a
                with lock:
                    counted["words"] += ex.kept
                    counted["examples"] += len(ex)
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
    stats.update(vocab_seconds=begin - start, threads=threads)
    return WordVectors(list(vocab.words), syn0.numpy(), vocab.counts.copy()), stats


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
        "batch": cfg.batch,
    }


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
