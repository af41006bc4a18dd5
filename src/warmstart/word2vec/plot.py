"""The classic word2vec picture: word pairs projected to 2-D, an arrow from the first word to the second.

Mikolov et al. (2013) showed countries and their capitals in a PCA projection of skip-gram vectors: the
arrows are nearly parallel. ``projection_png`` draws that figure for any pairs (PCA by default, t-SNE with
scikit-learn). Vectors are scaled to unit length first (cosine is the geometry the model is judged by).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np

from warmstart.atomic import write_atomic
from warmstart.errors import WarmstartError
from warmstart.word2vec.vectors import WordVectors

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COUNTRY_CAPITAL = [
    ("france", "paris"),
    ("germany", "berlin"),
    ("italy", "rome"),
    ("spain", "madrid"),
    ("russia", "moscow"),
    ("japan", "tokyo"),
    ("china", "beijing"),
    ("greece", "athens"),
    ("egypt", "cairo"),
    ("poland", "warsaw"),
    ("portugal", "lisbon"),
    ("turkey", "ankara"),
]
COMPARATIVES = [
    ("good", "better"),
    ("bad", "worse"),
    ("big", "bigger"),
    ("small", "smaller"),
    ("large", "larger"),
    ("great", "greater"),
    ("high", "higher"),
    ("low", "lower"),
    ("old", "older"),
    ("young", "younger"),
    ("strong", "stronger"),
    ("long", "longer"),
]
GROUPS = {"country-capital": COUNTRY_CAPITAL, "comparatives": COMPARATIVES}


def _word(wv: WordVectors, word: str) -> str | None:
    for candidate in (word, word.lower()):
        if candidate in wv:
            return candidate
    return None


def _pca(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    out = x @ vt[:2].T
    return np.pad(out, ((0, 0), (0, 2 - out.shape[1])))  # fewer than 2 components when there are 2 points


def _tsne(x: np.ndarray) -> np.ndarray:
    try:
        from sklearn.manifold import TSNE
    except ImportError:
        raise WarmstartError(
            "t-SNE needs scikit-learn", "pip install scikit-learn, or use method='pca'"
        ) from None
    perplexity = min(30.0, max(1.0, (len(x) - 1) / 3))
    return TSNE(2, perplexity=perplexity, init="pca", random_state=0).fit_transform(x.astype(np.float64))


METHODS = {"pca": _pca, "tsne": _tsne}


def projection_png(
    wv: WordVectors,
    pairs: list[tuple[str, str]],
    out: str | Path,
    method: str = "pca",
    title: str | None = None,
) -> dict:
    """Draw ``pairs`` (e.g. COUNTRY_CAPITAL) projected to 2-D by ``method`` (pca or tsne) into PNG ``out``.
    Returns ``{"path", "method", "used", "skipped"}`` (JSON-able; skipped: pairs with a word not in the
    vocabulary; a capitalised word is looked up in lowercase when only that is known)."""
    if method not in METHODS:
        raise WarmstartError(f"unknown projection '{method}'", f"use one of {', '.join(METHODS)}")
    used, skipped = [], []
    for first, second in pairs:
        a, b = _word(wv, first), _word(wv, second)
        (used if a and b else skipped).append((a, b) if a and b else (first, second))
    if not used:
        raise WarmstartError(
            f"none of the {len(pairs)} word pairs has both words in the vocabulary",
            "choose pairs of words the model knows (or train on more text)",
        )
    words = list(dict.fromkeys(w for pair in used for w in pair))
    position = {w: i for i, w in enumerate(words)}
    xy = METHODS[method](wv.unit()[[wv.index[w] for w in words]].astype(np.float64))

    fig, ax = plt.subplots(figsize=(7, 6), dpi=110)
    firsts = sorted({position[a] for a, _ in used})
    seconds = sorted({position[b] for _, b in used} - set(firsts))
    ax.scatter(xy[firsts, 0], xy[firsts, 1], color="tab:blue", zorder=3)
    ax.scatter(xy[seconds, 0], xy[seconds, 1], color="tab:red", zorder=3)
    for a, b in used:
        ax.annotate(
            "",
            xy=xy[position[b]],
            xytext=xy[position[a]],
            arrowprops={"arrowstyle": "->", "color": "0.5", "lw": 1, "shrinkA": 4, "shrinkB": 4},
        )
    for w, (x, y) in zip(words, xy):
        ax.annotate(w, (x, y), xytext=(4, 3), textcoords="offset points", fontsize=9)
    ax.set_title(title or f"{method.upper()} projection of {len(used)} word pairs")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.margins(0.12)
    fig.tight_layout()
    out = Path(out)
    try:  # the format its name says: .png, .svg (text stays text) or .pdf
        write_atomic(out, lambda fh: fig.savefig(fh, format=picture_format(out)))
    finally:
        plt.close(fig)
    return {"path": str(out), "method": method, "used": used, "skipped": skipped}


PICTURES = ("png", "svg", "pdf")


def picture_format(out: str | Path) -> str:
    """The picture format ``out``'s name asks for; WarmstartError for a name that is not a picture's."""
    fmt = Path(out).suffix.lower().lstrip(".")
    if fmt not in PICTURES:
        raise WarmstartError(
            f"{out} is not the name of a picture file",
            f"end it in {', '.join('.' + f for f in PICTURES)}, e.g. {Path(out).with_suffix('.png').name}",
        )
    return fmt
