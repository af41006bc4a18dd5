"""One word in many sentences: its contextual vectors from an encoder, against its one static vector.

``find_occurrences`` picks sentences of a corpus that hold the word (as a whole word, any case). With senses
given as cue words (``{"finance": ["loan", "deposit"], "river": ["river", "shore"]}``) a sentence gets the
one sense whose cues it holds (sentences with cues of no sense, or of two, are skipped) and the senses are
balanced; without senses every sentence is kept, unlabeled. ``contextual_vectors`` encodes each sentence and
averages the word's sub-word states at a layer. ``sense_separation`` measures how well the vectors tell the
senses apart: leave-one-out nearest-centroid accuracy (a static vector, the same for every sentence, scores
the majority share: chance). ``plot_senses`` draws the contextual vectors in 2-D (PCA) coloured by sense,
beside the static word2vec space around the word (the word is one point there, whatever its sense).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from warmstart.atomic import write_atomic
from warmstart.checkpoints.load import load_encoder
from warmstart.data.catalog import open_dataset
from warmstart.errors import WarmstartError
from warmstart.nn.pooling import check_layer, select
from warmstart.tasks.base import encoder_inputs
from warmstart.word2vec.io import load_vectors

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass
class Occurrence:
    sentence: str
    start: int  # character span of the word in the sentence
    end: int
    sense: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def parse_senses(specs: Iterable[str]) -> dict[str, list[str]]:
    """``["finance=loan,deposit", "river=river,shore"]`` -> {sense: cue words}; an error for a bad spec."""
    senses: dict[str, list[str]] = {}
    for spec in specs:
        name, eq, cues = spec.partition("=")
        words = [w.strip().lower() for w in cues.split(",") if w.strip()]
        if not eq or not name.strip() or not words:
            raise WarmstartError(
                f"cannot read the sense '{spec}'", "write NAME=CUE,CUE,... e.g. river=river,shore"
            )
        senses[name.strip()] = words
    if len(senses) == 1:
        raise WarmstartError("one sense given", "give two or more --sense NAME=CUES, or none")
    return senses


def _has_word(words: list[str]) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)


def find_occurrences(
    texts: Iterable[str], word: str, senses: dict[str, list[str]] | None = None, limit: int = 40
) -> list[Occurrence]:
    """Up to ``limit`` sentences holding ``word`` (with senses: up to limit / senses of each)."""
    word = word.strip()
    if not word or len(word.split()) != 1:
        raise WarmstartError(f"--word must be one word, got {word!r}", "e.g. --word bank")
    target = _has_word([word])
    cues = {name: _has_word(words) for name, words in (senses or {}).items()}
    quota = {name: limit // len(cues) for name in cues} if cues else None
    found: list[Occurrence] = []
    for text in texts:
        for sentence in _SENTENCE.split(" ".join(text.split())):
            match = target.search(sentence)
            if match is None or len(sentence) > 600:
                continue
            rest = sentence[: match.start()] + " " + sentence[match.end() :]  # the word is no cue of itself
            sense = None
            if cues:
                hits = [name for name, cue in cues.items() if cue.search(rest)]
                if len(hits) != 1 or quota[hits[0]] == 0:
                    continue
                sense = hits[0]
                quota[sense] -= 1
            found.append(Occurrence(sentence, match.start(), match.end(), sense))
            if len(found) == limit or (quota is not None and not any(quota.values())):
                return found
    return found


@torch.no_grad()
def contextual_vectors(encoder, tokenizer, occurrences: list[Occurrence], layer: str = "last") -> np.ndarray:
    """(occurrences, hidden) float32: the mean of the word's sub-word states at ``layer`` in each sentence."""

    check_layer(layer, encoder.config.num_hidden_layers)
    encoder.eval()
    room = encoder.config.max_position_embeddings - 2  # [CLS] ... [SEP]
    rows = []
    for occ in occurrences:
        enc = tokenizer.backend.encode(occ.sentence, add_special_tokens=False)
        where = [i for i, (a, b) in enumerate(enc.offsets) if b > a and a < occ.end and b > occ.start]
        if not where:
            raise WarmstartError(
                f"the word at {occ.start}-{occ.end} of {occ.sentence[:60]!r} has no token",
                "pick another word",
            )
        first = max(0, min(where[0] - room // 2, len(enc.ids) - room))  # a long sentence: a window on it
        ids = enc.ids[first : first + room]
        where = [i - first + 1 for i in where if i - first < room]
        cls, sep = tokenizer.cls_id, tokenizer.sep_id
        ids = ([cls] if cls is not None else []) + ids + ([sep] if sep is not None else [])
        if cls is None:
            where = [i - 1 for i in where]
        batch = encoder_inputs([ids], [[0] * len(ids)], tokenizer.pad_id or 0)
        states = encoder.hidden_states(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        rows.append(select(states, layer)[0, where].float().mean(0).numpy())
    return np.stack(rows).astype(np.float32) if rows else np.zeros((0, 0), dtype=np.float32)


def sense_separation(vectors: np.ndarray, senses: list[str]) -> dict:
    """Leave-one-out nearest-centroid accuracy (cosine) of the senses, and the majority share (chance)."""
    names = sorted(set(senses))
    labels = np.array([names.index(s) for s in senses])
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    right = 0
    for i in range(len(unit)):
        others = np.arange(len(unit)) != i
        centroids = np.stack([unit[others & (labels == k)].mean(0) for k in range(len(names))])
        right += int(np.argmax(centroids @ unit[i]) == labels[i])
    majority = max(np.bincount(labels)) / len(labels)
    return {"accuracy": right / len(unit), "chance": float(majority), "count": len(unit)}


def pca_2d(vectors: np.ndarray) -> np.ndarray:
    centred = vectors - vectors.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:2].T


def plot_senses(
    vectors: np.ndarray,
    occurrences: list[Occurrence],
    word: str,
    out: Path,
    title: str,
    static=None,
    senses: dict[str, list[str]] | None = None,
) -> Path:
    """Left: the contextual vectors in 2-D, by sense. Right (with ``static``, a word2vec ``Vectors``): the
    word and its neighbours and sense cues in the static space, where the word is a single point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 2 if static is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.4), squeeze=False)
    ax = axes[0][0]
    xy = pca_2d(vectors)
    labels = [o.sense or "unlabeled" for o in occurrences]
    colours = dict(zip(sorted(set(labels)), plt.cm.tab10.colors))
    for name, colour in colours.items():
        pts = xy[[i for i, s in enumerate(labels) if s == name]]
        ax.scatter(pts[:, 0], pts[:, 1], s=36, color=colour, label=f"{name} ({len(pts)})", alpha=0.85)
    ax.set(title=title, xlabel="principal component 1", ylabel="principal component 2")
    ax.legend(frameon=False, fontsize=8)
    if static is not None:
        _static_panel(axes[0][1], static, word, senses or {}, colours)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:  # the format its name says (`embed --plot` refuses others); written whole or not at all
        fmt = out.suffix.lower().lstrip(".") or "png"
        write_atomic(out, lambda fh: fig.savefig(fh, format=fmt, dpi=150))
    finally:
        plt.close(fig)
    return out


def _static_panel(ax, static, word: str, senses: dict[str, list[str]], colours: dict) -> None:
    key = word.lower() if word.lower() in static.index else word
    if key not in static.index:
        ax.text(0.5, 0.5, f"'{word}' has no static vector", ha="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    points = {key: "word"}
    for name, cues in senses.items():
        for cue in cues:
            if cue in static.index and cue not in points:
                points[cue] = name
    for neighbour, _ in static.most_similar([key], topn=8, restrict=30000):
        points.setdefault(neighbour, "nearest neighbour")
    words = list(points)
    xy = pca_2d(np.stack([static.unit()[static.index[w]] for w in words]))
    for (x, y), w in zip(xy, words):
        role = points[w]
        if role == "word":
            ax.scatter([x], [y], marker="*", s=220, color="black", zorder=3)
        else:
            ax.scatter([x], [y], s=24, color=colours.get(role, "0.6"))
        ax.annotate(w, (x, y), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.set(title=f"static word2vec: '{word}' is one vector (star)", xlabel="principal component 1",
           ylabel="principal component 2")  # fmt: skip


def embed_word(
    run: str,
    data: str | list[str],
    word: str,
    sense_specs: list[str],
    out: str | Path,
    *,
    layer: str = "last",
    split: str = "all",
    limit: int = 40,
    plot: str | None = None,
    static: str | None = None,
    options=None,
    random_init: bool = False,
) -> dict:
    """`warmstart embed RUN --data D --word W`: vectors to OUT (.npy), sentences and scores to OUT.json, and
    with ``plot`` ("" = OUT with .png) the picture. Returns what was written and measured."""
    import json

    if limit < 2:
        raise WarmstartError(f"--limit must be at least 2, got {limit}", "e.g. --limit 40")
    senses = parse_senses(sense_specs)
    if random_init:
        torch.manual_seed(0)  # the same random twin every time
    encoder, tokenizer, _ = load_encoder(run, random_init=random_init)
    names = [data] if isinstance(data, str) else list(data)
    texts = (t for name in names for t in open_dataset(name, options).texts(split))
    data = " + ".join(names)
    occurrences = find_occurrences(texts, word, senses or None, limit)
    if len(occurrences) < 2 or (senses and len({o.sense for o in occurrences}) < len(senses)):
        found = ", ".join(f"{k} {v}" for k, v in _counts(occurrences).items()) or "none"
        raise WarmstartError(
            f"too few sentences with '{word}' in {data} ({split}): {found}",
            "pick a more frequent word, another corpus or split, or other sense cues",
        )
    vectors = contextual_vectors(encoder, tokenizer, occurrences, layer)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, lambda fh: np.save(fh, vectors))
    result = {"word": word, "data": data, "split": split, "layer": layer, "count": len(occurrences)}
    result["senses"] = _counts(occurrences)
    if senses:
        result["cues"] = senses
        result["separation"] = sense_separation(vectors, [o.sense for o in occurrences])
    result["occurrences"] = [o.to_dict() for o in occurrences]
    sentences = out.with_suffix(".json")
    write_atomic(sentences, lambda fh: fh.write(json.dumps(result, indent=2) + "\n"), text=True)
    result.update(vectors=str(out), sentences=str(sentences))
    if plot is not None:
        where = Path(plot) if plot else out.with_suffix(".png")
        title = f"'{word}' in {len(occurrences)} sentences: {layer} layer"
        wv = load_vectors(static) if static else None
        result["plot"] = str(plot_senses(vectors, occurrences, word, where, title, wv, senses))
    return result


def _counts(occurrences: list[Occurrence]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for o in occurrences:
        counts[o.sense or "unlabeled"] = counts.get(o.sense or "unlabeled", 0) + 1
    return counts
