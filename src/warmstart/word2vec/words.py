"""The deterministic word tokenization used by word2vec, and corpora as word lists.

A word is a maximal run of letters or digits (Unicode-aware), optionally joined by single inner apostrophes
or hyphens ("don't", "state-of-the-art"); everything is lowercased first. Punctuation and other symbols are
dropped. Documents are kept apart: a context window never crosses a document boundary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from warmstart.data.corpus import corpus_texts
from warmstart.data.counterfactual import augmented_texts
from warmstart.data.dataset import DataOptions

WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")


def tokenize(text: str) -> list[str]:
    """Lowercased words of ``text`` (see the module docstring for what counts as a word)."""
    return WORD.findall(text.lower().replace("\u2019", "'"))


def documents(texts: Iterable[str]) -> Iterator[list[str]]:
    """Word lists of non-empty documents."""
    for text in texts:
        words = tokenize(text)
        if words:
            yield words


def corpus_documents(
    names: list[str],
    split: str = "train",
    split_seed: int = 0,
    counterfactual: bool = False,
    text_column: str = "text",
    txt_mode: str = "line",
) -> list[list[str]]:
    """The word lists of one split of catalog corpora (names from `warmstart data list`, or text files;
    ``text_column`` of a table, ``txt_mode`` of a .txt); ``counterfactual``: each document followed by its
    gender-swapped copy (data/counterfactual.py)."""

    opts = DataOptions(text_column=text_column, txt_mode=txt_mode, split_seed=split_seed, label_column=None)
    texts = corpus_texts(names, opts, split)
    return list(documents(augmented_texts(texts) if counterfactual else texts))
