"""An open vocabulary for a model that reads characters (ELMo's character CNN).

A word tokenizer maps a word outside its vocabulary to [UNK], and a character model then reads the
characters of "[UNK]", not of the word: on Brown 7.3% of the tokens were lost that way. Before a batch of
text is encoded for such a model, ``reading`` gives the tokenizer a copy that also knows the text's words
(new ids after the vocabulary) and tells the model their characters. The copy only grows: a word keeps
its id for the life of the process (a server's later requests, a notebook's later calls), so what was
encoded earlier stays valid; the tokenizer a run saves is the original. Words longer than the model's
character window stay [UNK], as they do when the tokenizer is trained.

The model side is duck-typed: a module with ``reads_characters``, ``word_bytes`` (the longest word its
character window holds) and ``read_words(tokenizer)`` (models/elmo.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer as _HFTokenizer
from tokenizers import models

from warmstart.tokenization.tokenizer import Tokenizer

MAX_OPEN = 500_000  # words a process adds at most (a server fed random strings stays bounded)


def texts_of(values) -> Iterable[str]:
    """Every string in records (dicts, lists, strings), labels included: extra words are harmless."""
    if isinstance(values, str):
        yield values
    elif isinstance(values, dict):
        for v in values.values():
            yield from texts_of(v)
    elif isinstance(values, list | tuple):
        for v in values:
            yield from texts_of(v)


def _words(backend: _HFTokenizer, texts: Iterable[str]) -> set[str]:
    norm, pre = backend.normalizer, backend.pre_tokenizer
    words: set[str] = set()
    for text in texts:
        text = norm.normalize_str(text) if norm is not None else text
        words.update(w for w, _ in (pre.pre_tokenize_str(text) if pre is not None else [(text, None)]))
    return words


def open_vocabulary(tokenizer: Tokenizer, texts: Iterable[str], max_bytes: int) -> Tokenizer:
    """The tokenizer's growing open copy, now also holding every word of ``texts`` of up to ``max_bytes``
    UTF-8 bytes (a word tokenizer only; any other algorithm is returned as it is)."""
    if tokenizer.algorithm != "word":
        return tokenizer
    opened = getattr(tokenizer, "_opened", None)
    if opened is None:
        backend = _HFTokenizer.from_str(tokenizer.backend.to_str())
        opened = Tokenizer(
            backend,
            dict(tokenizer.roles),
            do_lower_case=tokenizer.do_lower_case,
            model_max_length=tokenizer.model_max_length,
        )
        opened.base_size = tokenizer.vocab_size
        tokenizer._opened = opened
    vocab = opened.backend.get_vocab(with_added_tokens=False)
    known = opened.backend.get_vocab(with_added_tokens=True)
    new = sorted(
        w for w in _words(opened.backend, texts) if w not in known and len(w.encode("utf-8")) <= max_bytes
    )
    room = MAX_OPEN - (opened.vocab_size - opened.base_size)
    if new and room > 0:
        start = opened.vocab_size
        vocab.update({w: start + i for i, w in enumerate(new[:room])})
        opened.backend.model = models.WordLevel(vocab=vocab, unk_token=opened.roles["unk_token"])
    return opened


def _reader(model):
    reader = next((m for m in model.modules() if hasattr(m, "read_words")), None)
    return reader if reader is not None and reader.reads_characters else None


def teach(model, opened: Tokenizer | None) -> None:
    """Tell ``model`` (a freshly built or loaded one) the characters of the words ``opened`` added."""
    reader = _reader(model) if opened is not None else None
    if reader is not None:
        reader.read_words(opened)


def reading(model, tokenizer: Tokenizer, records) -> Tokenizer:
    """The tokenizer to encode ``records`` with for ``model``: for a model that reads characters, the open
    copy holding the records' words, the model told their characters; otherwise ``tokenizer`` itself."""
    reader = _reader(model)
    if reader is None:
        return tokenizer
    opened = open_vocabulary(tokenizer, texts_of(records), reader.word_bytes)
    reader.read_words(opened)
    return opened
