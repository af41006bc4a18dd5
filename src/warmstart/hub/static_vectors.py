"""Static word vectors as a warmstart model (`warmstart import vectors:SPEC --out DIR`): the first step of
the lectures' history (word2vec / GloVe, one context-free vector per word) in the shape every task reads.

SPEC is what every word2vec command takes: a `warmstart word2vec train` run, a .txt/.vec/.bin/.npy vectors
file, or ``glove`` (GloVe 6B 50d from its PyPI package). The model written is an ELMo with no LSTM layers
(models/elmo.py: ``token_representation=embeddings``, ``num_layers=0``): its one layer is the token layer,
an embedding table whose rows are the vectors, so `finetune --init DIR` trains ELMo's task model over it (by
default frozen: the layer's scale and a task biLSTM under the task's head, the ELMo paper's baseline over
GloVe), and `embed`, `probe`, `predict`, `serve` and `study` take it like any ELMo run. Its random twin
(`study`'s scratch arm, `--from-scratch`) is the same table with random rows: static vectors that learned
nothing.

The tokenizer is a word tokenizer whose vocabulary is the vectors' words, most frequent first after the
word tokenizer's specials (which get zero vectors, as does a word outside the vocabulary: [UNK]). It cuts
text as word2vec's words (word2vec/words.py) are cut: lowercased, the typographic apostrophe made plain,
a word a run of letters or digits joined by inner apostrophes or hyphens, every other run of non-space
characters one token (so a tagging set's punctuation keeps its positions). A vector file's words that
this cut never produces (GloVe's ``n't``) stay in the table and are never read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch
from tokenizers import Regex, normalizers, pre_tokenizers

from warmstart.checkpoints.card import RunCard
from warmstart.errors import WarmstartError
from warmstart.hub.convert import check_out
from warmstart.models.elmo import ElmoConfig
from warmstart.outputs import mark
from warmstart.pretraining.build import build_unit, model_config_json
from warmstart.pretraining.config import config_class
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import word_tokenizer
from warmstart.train.checkpoint import atomic_dir, save_weights, write_json
from warmstart.word2vec.io import load_vectors
from warmstart.word2vec.vectors import WordVectors
from warmstart.word2vec.words import WORD

PREFIX = "vectors:"
FORM = "vectors:RUN_OR_FILE (a `warmstart word2vec train` run, a .txt/.vec/.bin/.npy file, or glove)"


def parse_source(src: str) -> str:
    spec = str(src).removeprefix(PREFIX)
    if not spec:
        raise WarmstartError(f"{src} names no word vectors", f"write it as {FORM}")
    return spec


def vectors_tokenizer(words: list[str]) -> Tokenizer:
    """A word tokenizer over ``words`` (after a word tokenizer's specials) that cuts text as word2vec does."""
    return word_tokenizer(
        words,
        lowercase=True,
        normalizer=normalizers.Sequence([normalizers.Replace("\u2019", "'"), normalizers.Lowercase()]),
        pre_tokenizer=pre_tokenizers.Sequence(
            [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(WORD.pattern), "isolated")]
        ),
    )


def _table(wv: WordVectors, tokenizer: Tokenizer) -> torch.Tensor:
    """(vocab, dim) rows: each word's vector, zeros for the specials."""
    table = np.zeros((tokenizer.vocab_size, wv.dim), dtype=np.float32)
    vocab = tokenizer.backend.get_vocab(with_added_tokens=False)
    rows = [(vocab[w], i) for i, w in enumerate(wv.words) if w in vocab]
    ids, src = np.array([r[0] for r in rows], dtype=np.int64), np.array([r[1] for r in rows], dtype=np.int64)
    table[ids] = wv.vectors[src]
    return torch.from_numpy(table)


def _checked(wv: WordVectors, spec: str) -> WordVectors:
    bad = next((w for w in wv.words if not w or w != w.strip() or len(w.split()) != 1), None)
    if bad is not None:
        raise WarmstartError(f"{spec} holds the word {bad!r}, which no word tokenizer produces", "remove it")
    if not np.isfinite(wv.vectors).all():
        rows = int((~np.isfinite(wv.vectors)).any(1).sum())
        raise WarmstartError(
            f"{spec} has {rows} vectors with NaN or infinite values", "retrain or remove them"
        )
    return wv


def import_vectors(src: str, out: str | Path, overwrite: bool = False) -> Path:
    """Write the vectors ``vectors:SPEC`` as a warmstart model directory ``out`` (config.json,
    model.safetensors, the tokenizer; see the module doc); returns ``out``."""
    spec, out = parse_source(src), Path(out)
    inputs = [Path(spec)] if Path(spec).exists() else []
    check_out(out, overwrite, *inputs)
    wv = _checked(load_vectors(spec), spec)
    tokenizer = vectors_tokenizer(wv.words)
    cfg = ElmoConfig(
        vocab_size=tokenizer.vocab_size,
        token_representation="embeddings",
        projection_dim=wv.dim,
        cell_size=wv.dim,
        num_layers=0,
    )
    pc = config_class({"arch": "elmo"})(arch="elmo", objective="bilm", model=cfg)
    card = dataclasses.replace(RunCard.read(model_config_json(pc, tokenizer)), imported_from=str(src))
    config_json = card.write(model_config_json(pc, tokenizer))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        unit = build_unit(pc, tokenizer)
    unit.model.embed.weight.data.copy_(_table(wv, tokenizer))

    def write(tmp: Path) -> None:
        write_json(config_json, tmp / "config.json")
        save_weights(unit, tmp / "model.safetensors")
        tokenizer.save(tmp)
        mark(tmp, "import")

    return atomic_dir(out, write)
