"""The SGD steps of skip-gram and CBOW with negative sampling, compiled (numba), one chunk of examples per
call, without the GIL so that worker threads update the shared matrices at once (Hogwild, as word2vec.c).

Both take a chunk's examples per centre word (batches.py): the centre ``words[i]``, its context ids
``inputs[starts[i]:starts[i + 1]]`` and ``negatives[i]`` (a negative equal to the centre is skipped). The
learning rate of centre i is ``lr0 - (lr0 - min_lr) * (done + position[i]) / total``.

Skip-gram, as word2vec.c orients it: each context word c predicts the centre. The centre's K + 1 output
rows (the centre and its negatives) are shared by every context word of the window (Ji et al. 2016,
"Parallelizing Word2Vec in Shared and Distributed Memory"): they are read once, each context's input row is
updated at once, and the output rows get the window's summed step at its end. That is one SGD step of the
window's summed loss; it reads each output row once per window instead of once per pair.

CBOW: the mean (or sum) h of the context's input rows predicts the centre; the output rows are updated one
after the other, and every context row gets the whole step of h, exactly as word2vec.c and gensim.

Both return (loss summed over the measured examples, examples measured): every ``loss_every``-th centre
is measured, a pair (skip-gram) or a centre (CBOW) being one example.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(nogil=True, fastmath=True, cache=True)
def _lr(lr0, min_lr, done, position, total):
    return np.float32(max(min_lr, lr0 - (lr0 - min_lr) * (done + position) / total))


@numba.njit(nogil=True, fastmath=True, cache=True)
def _dot(a, b):
    s = np.float32(0.0)
    for k in range(a.shape[0]):
        s += a[k] * b[k]
    return s


@numba.njit(nogil=True, fastmath=True, cache=True)
def _axpy(a, x, y):
    for k in range(x.shape[0]):
        y[k] += a * x[k]


@numba.njit(nogil=True, fastmath=True, cache=True)
def _step(s, label, lr, measure):
    """(the gradient factor (label - sigma(s)) * lr, the example's loss term when measured)."""
    sig = np.float32(1.0) / (np.float32(1.0) + math.exp(-s))
    loss = 0.0
    if measure:
        loss = -math.log(max(sig if label > 0.5 else 1.0 - sig, 1e-30))
    return np.float32((np.float32(label) - sig) * lr), loss


@numba.njit(nogil=True, fastmath=True, cache=True)
def skipgram_chunk(syn0, syn1, inputs, starts, words, negatives, position, lr0, min_lr, done, total, every):
    n, k = negatives.shape
    dim = syn0.shape[1]
    targets = np.empty(k + 1, np.int64)
    rows = np.empty((k + 1, dim), np.float32)  # the window's output rows, read once
    du = np.empty((k + 1, dim), np.float32)
    g = np.empty(k + 1, np.float32)
    loss, measured = 0.0, 0
    for i in range(n):
        lr = _lr(lr0, min_lr, done, position[i], total)
        measure = i % every == 0
        targets[0] = words[i]
        for j in range(k):
            targets[j + 1] = negatives[i, j]
        for j in range(k + 1):
            rows[j] = syn1[targets[j]]
        du[:] = 0.0
        for c in range(starts[i], starts[i + 1]):
            v = syn0[inputs[c]]
            for j in range(k + 1):
                if j > 0 and targets[j] == targets[0]:
                    g[j] = 0.0  # a negative equal to the centre: skipped, as word2vec.c
                else:
                    g[j], term = _step(_dot(v, rows[j]), 1.0 if j == 0 else 0.0, lr, measure)
                    loss += term
            for j in range(k + 1):
                _axpy(g[j], v, du[j])  # the output rows' step, applied at the window's end
            for j in range(k + 1):
                _axpy(g[j], rows[j], v)  # the input row's step, at once
            measured += measure
        for j in range(k + 1):
            u = syn1[targets[j]]
            for d in range(dim):
                u[d] += du[j, d]
    return loss, measured


@numba.njit(nogil=True, fastmath=True, cache=True)
def cbow_chunk(syn0, syn1, inputs, starts, words, negatives, position, lr0, min_lr, done, total, every, mean):
    n, k = negatives.shape
    dim = syn0.shape[1]
    h = np.empty(dim, np.float32)
    neu = np.empty(dim, np.float32)
    loss, measured = 0.0, 0
    for i in range(n):
        lr = _lr(lr0, min_lr, done, position[i], total)
        measure = i % every == 0
        a, b = starts[i], starts[i + 1]
        h[:] = 0.0
        for c in range(a, b):
            v = syn0[inputs[c]]
            for d in range(dim):
                h[d] += v[d]
        if mean:
            for d in range(dim):
                h[d] /= b - a
        neu[:] = 0.0
        for j in range(k + 1):
            t = words[i] if j == 0 else negatives[i, j - 1]
            if j > 0 and t == words[i]:
                continue
            u = syn1[t]
            g, term = _step(_dot(h, u), 1.0 if j == 0 else 0.0, lr, measure)
            loss += term
            for d in range(dim):
                neu[d] += g * u[d]
                u[d] += g * h[d]
        for c in range(a, b):
            v = syn0[inputs[c]]
            for d in range(dim):
                v[d] += neu[d]
        measured += measure
    return loss, measured
