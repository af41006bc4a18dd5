"""Warm-start a transformer's token embedding table from word vectors.

Only tokens that are whole words get a vector: a WordPiece token without the "##" continuation prefix, a
byte-level BPE token that begins a word ("Ġword"), or a Unigram token that begins one ("▁word"), whose
lowercased text is a word of the vectors. Special tokens and word pieces keep their random initialisation.

The vectors are centred (their common direction carries no meaning) and, when their dimension differs from
the model's hidden size, projected: up by a random map with orthonormal rows, which keeps every cosine and
dot product; down by PCA onto the top principal directions. Finally they are scaled so that their
per-component standard deviation equals the model's initialisation std, so the warm rows sit at the same
scale as the random rows next to them and the tied output layer starts at its usual logit scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from warmstart.config import opt
from warmstart.errors import WarmstartError

PROJECTIONS = ("auto", "none")
WORD_START = {"bpe": "\u0120", "unigram": "\u2581"}


@dataclass
class EmbeddingInitConfig:
    vectors: str | None = opt(
        None,
        "word vectors for the token embedding table: a `word2vec train` run or a .txt/.bin/.npy file",
    )
    project: str = opt(
        "auto",
        "auto: map vectors of another size onto the hidden size (orthonormal up, PCA down); none: refuse",
    )


def token_words(vocab: dict[str, int], algorithm: str, special_ids) -> dict[int, str]:
    """token id -> the lowercased word it stands for, for tokens that are whole words (see module doc)."""
    marker = WORD_START.get(algorithm)
    out = {}
    for token, idx in vocab.items():
        if idx in special_ids:
            continue
        if algorithm == "wordpiece":
            if token.startswith("##"):
                continue
            word = token
        elif token.startswith(marker):
            word = token[len(marker) :]
        else:
            continue
        if word:
            out[idx] = word.lower()
    return out


def check_dimensions(dim: int, hidden: int, project: str) -> None:
    """A clear error for an unknown projection, or for vectors of another dimension with projection off."""
    if project not in PROJECTIONS:
        raise WarmstartError(
            f"unknown embeddings.project '{project}'", f"use one of: {', '.join(PROJECTIONS)}"
        )
    if dim != hidden and project == "none":
        raise WarmstartError(
            f"the word vectors have {dim} dimensions but the model's hidden size is {hidden}",
            "train vectors with that dimension, or set embeddings.project=auto to project them",
        )


def project_rows(vectors: np.ndarray, hidden: int, std: float, project: str, seed: int = 0) -> np.ndarray:
    """Centre, map to ``hidden`` dimensions (see module doc), and scale to per-component ``std``."""
    check_dimensions(vectors.shape[1], hidden, project)
    x = vectors.astype(np.float64) - vectors.mean(0, keepdims=True)
    dim = x.shape[1]
    if dim != hidden:
        if dim < hidden:
            q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((hidden, dim)))
            x = x @ q.T  # q has orthonormal columns: inner products are kept
        else:
            _, _, vt = np.linalg.svd(x, full_matrices=False)
            x = x @ vt[:hidden].T
    scale = std / max(float(x.std()), 1e-12)
    return (x * scale).astype(np.float32)


def warm_start_embeddings(
    embedding: torch.nn.Embedding, tokenizer, wv, std: float, project: str = "auto"
) -> dict:
    """Overwrite the rows of whole-word tokens found in ``wv``; returns coverage figures."""
    words = token_words(tokenizer.get_vocab(), tokenizer.algorithm, tokenizer.special_ids)
    hits = {idx: wv.index[w] for idx, w in words.items() if w in wv.index}
    if not hits:
        raise WarmstartError(
            "no token of the tokenizer is a word of the word vectors",
            "use vectors of lowercased words in the same language, e.g. from `warmstart word2vec train`",
        )
    ids = np.fromiter(hits.keys(), dtype=np.int64)
    rows = project_rows(
        wv.vectors[np.fromiter(hits.values(), dtype=np.int64)], embedding.embedding_dim, std, project
    )
    with torch.no_grad():
        embedding.weight[torch.from_numpy(ids)] = torch.from_numpy(rows).to(embedding.weight)
    return {
        "tokens_warm": len(hits),
        "whole_word_tokens": len(words),
        "vocab_size": embedding.num_embeddings,
        "vector_dim": wv.dim,
        "hidden_size": embedding.embedding_dim,
    }
