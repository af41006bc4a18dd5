"""Train a tokenizer (WordPiece, BPE, unigram) with the `tokenizers` library."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, processors, trainers
from tokenizers import Tokenizer as _HFTokenizer

from warmstart.atomic import check_writable
from warmstart.errors import WarmstartError
from warmstart.outputs import made_by_warmstart, mark, refuse_foreign
from warmstart.tokenization.sentinels import add_sentinels
from warmstart.tokenization.tokenizer import EXTRA_ROLES, SPECIAL_TOKENS, Tokenizer, write_atomic

ALGORITHMS = ("wordpiece", "bpe", "unigram", "word")
WORD_BYTES = 48  # the longest word (UTF-8 bytes) a word tokenizer keeps: ELMo's 50 characters less BOW/EOW


_MIN_VOCAB = {"wordpiece": 100, "bpe": 300, "unigram": 100, "word": 10}


def _unknown_algorithm(algorithm: str) -> WarmstartError:
    return WarmstartError(f"unknown tokenizer kind '{algorithm}'", f"use one of: {', '.join(ALGORITHMS)}")


def _build(algorithm: str, vocab_size: int, min_frequency: int, lowercase: bool, show_progress: bool):
    """An untrained ``tokenizers.Tokenizer`` pipeline and its trainer for ``algorithm``."""
    specials = list(SPECIAL_TOKENS[algorithm].values())
    if algorithm == "wordpiece":
        tok = _HFTokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##"))
        tok.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
        )
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
        )
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=specials,
            continuing_subword_prefix="##",
            # Rare characters (and their ## twins) would otherwise eat a small vocabulary.
            limit_alphabet=max(50, min(1000, vocab_size // 4)),
            show_progress=show_progress,
        )
    elif algorithm == "bpe":
        tok = _HFTokenizer(models.BPE(unk_token=None, fuse_unk=False))
        if lowercase:
            tok.normalizer = normalizers.Lowercase()
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.Sequence(
            [
                processors.ByteLevel(trim_offsets=True),
                processors.TemplateProcessing(
                    single="<s> $A </s>",
                    pair="<s> $A </s> </s>:1 $B:1 </s>:1",
                    special_tokens=[("<s>", 0), ("</s>", 2)],
                ),
            ]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=show_progress,
        )
    elif algorithm == "unigram":
        tok = _HFTokenizer(models.Unigram())
        norms = [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]  # a str would be literal
        if lowercase:
            norms.append(normalizers.Lowercase())
        tok.normalizer = normalizers.Sequence(norms)
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
        tok.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B:1 </s>:1", special_tokens=[("</s>", 1)]
        )
        trainer = trainers.UnigramTrainer(
            vocab_size=vocab_size,
            special_tokens=specials,
            unk_token="<unk>",
            max_piece_length=16,
            show_progress=show_progress,
        )
    elif algorithm == "word":
        tok, trainer = _word(vocab_size, min_frequency, specials, show_progress)
    else:  # pragma: no cover - checked by the caller
        raise _unknown_algorithm(algorithm)
    return tok, trainer


def _word(vocab_size: int, min_frequency: int, specials: list[str], show_progress: bool):
    """Whole words (ELMo): split on spaces and punctuation, case kept; <S> and </S> around each text."""
    tok = _HFTokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.post_processor = processors.TemplateProcessing(
        single="<S> $A </S>", pair="<S> $A </S> $B:1 </S>:1", special_tokens=[("<S>", 2), ("</S>", 3)]
    )
    trainer = trainers.WordLevelTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=specials,
        show_progress=show_progress,
    )
    return tok, trainer


def word_tokenizer(words: Iterable[str], lowercase: bool = False, normalizer=None, pre_tokenizer=None):
    """A word tokenizer (`--kind word`'s pipeline and specials) whose vocabulary is the specials, then
    ``words`` in order (duplicates once); ``normalizer`` / ``pre_tokenizer`` replace the algorithm's own."""
    specials = list(SPECIAL_TOKENS["word"].values())
    vocab = dict.fromkeys(specials)
    for w in words:
        vocab.setdefault(w)
    tok, _ = _word(len(vocab), 0, specials, False)
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre_tokenizer is not None:
        tok.pre_tokenizer = pre_tokenizer
    tok.model = models.WordLevel(vocab={w: i for i, w in enumerate(vocab)}, unk_token="[UNK]")
    tok.add_special_tokens(specials)
    roles = {**SPECIAL_TOKENS["word"], **EXTRA_ROLES["word"]}
    return Tokenizer(tok, roles=roles, do_lower_case=lowercase)


def _drop_long_words(tok: _HFTokenizer) -> _HFTokenizer:
    """A word tokenizer without words longer than WORD_BYTES (URLs, chemical names): they read as [UNK]
    rather than being cut to fit a character model's window."""
    vocab = tok.get_vocab(with_added_tokens=False)
    kept = sorted((i, w) for w, i in vocab.items() if len(w.encode("utf-8")) <= WORD_BYTES)
    if len(kept) == len(vocab):
        return tok
    tok.model = models.WordLevel(vocab={w: n for n, (_, w) in enumerate(kept)}, unk_token="[UNK]")
    return tok


def _check_out(out_dir: Path, overwrite: bool) -> bool:
    """Refuse an ``out_dir`` that is a file, holds a tokenizer (unless ``overwrite``) or, with ``overwrite``,
    is a directory warmstart did not make; True when the marker may claim it: new, empty or a tokenizer's
    (not a run or a folder the tokenizer joins)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise WarmstartError(f"{out_dir} exists and is not a directory", "choose another --out")
    check_writable(out_dir)
    if (out_dir / "tokenizer.json").exists() and not overwrite:
        raise WarmstartError(
            f"{out_dir} already contains a tokenizer",
            "pass --overwrite to replace it or choose another --out",
        )
    if overwrite:
        refuse_foreign(out_dir)
    return not out_dir.is_dir() or not any(out_dir.iterdir()) or made_by_warmstart(out_dir) == "tokenizer"


def train_tokenizer(
    texts: Iterable[str],
    kind: str,
    vocab_size: int,
    out_dir: str | os.PathLike,
    *,
    min_frequency: int = 2,
    lowercase: bool | None = None,
    show_progress: bool = True,
    overwrite: bool = False,
    model_max_length: int = 512,
    sentinels: int = 0,
) -> Tokenizer:
    """Train a tokenizer of algorithm ``kind`` (wordpiece, bpe, unigram, word) on ``texts`` and save it
    atomically to ``out_dir``.

    ``sentinels``: add T5's ``<extra_id_0>`` ... as special tokens after the trained vocabulary (span
    corruption).
    ``lowercase`` defaults to True for wordpiece (BERT uncased, accents stripped) and False otherwise.
    Blank texts are skipped. Refuses an ``out_dir`` that already holds a tokenizer unless ``overwrite``.
    """
    algorithm = str(kind).lower()
    if algorithm not in ALGORITHMS:
        raise _unknown_algorithm(algorithm)
    out_dir = Path(out_dir)
    own = _check_out(out_dir, overwrite)
    if int(min_frequency) < 0:
        raise WarmstartError(f"min_frequency {min_frequency} is negative", "use 0 or more (2 is usual)")
    minimum = _MIN_VOCAB[algorithm]
    if int(vocab_size) < minimum:
        raise WarmstartError(
            f"vocab_size {vocab_size} is too small for a {algorithm} tokenizer",
            f"use at least {minimum} (it must hold the special tokens and the base alphabet)",
        )
    if lowercase is None:
        lowercase = algorithm == "wordpiece"

    tok, trainer = _build(algorithm, int(vocab_size), int(min_frequency), bool(lowercase), show_progress)
    seen = {"docs": 0}

    def nonblank() -> Iterator[str]:
        for text in texts:
            if text and not text.isspace():
                seen["docs"] += 1
                yield text

    length = len(texts) if isinstance(texts, Sequence) else None
    tok.train_from_iterator(nonblank(), trainer=trainer, length=length)
    if seen["docs"] == 0:
        raise WarmstartError("the tokenizer training corpus is empty (no non-blank text)", "check the corpus")
    tok.no_truncation()
    tok.no_padding()
    if algorithm == "word":
        tok = _drop_long_words(tok)

    roles = dict(SPECIAL_TOKENS[algorithm])
    roles.update(EXTRA_ROLES.get(algorithm, {}))
    result = Tokenizer(tok, roles=roles, do_lower_case=bool(lowercase), model_max_length=model_max_length)
    if sentinels:
        result = add_sentinels(result, sentinels)

    def write(tmp: Path) -> None:
        result.write_files(tmp)
        if own:
            mark(tmp, "tokenizer")

    write_atomic(out_dir, write)
    return result
