"""Subword tokenizers: train (WordPiece, byte-level BPE, Unigram), save, load and encode.

A trained tokenizer is a directory with three files that both warmstart and Hugging Face ``transformers``
read: ``tokenizer.json`` (the ``tokenizers`` pipeline), ``tokenizer_config.json`` (tokenizer class, special
token roles, ``model_max_length``, ``do_lower_case``) and ``special_tokens_map.json``.

Kinds and their special tokens (ids in this order, starting at 0):

- ``wordpiece`` (BERT): ``[PAD] [UNK] [CLS] [SEP] [MASK]``; ``[CLS] A [SEP]`` / ``[CLS] A [SEP] B [SEP]``.
- ``bpe`` (byte-level, GPT-2/RoBERTa): ``<s> <pad> </s> <unk> <mask>``;
  ``<s> A </s>`` / ``<s> A </s> </s> B </s>``.
- ``unigram`` (T5/sentencepiece-like): ``<pad> </s> <unk> <mask>``; ``A </s>`` / ``A </s> B </s>``.

The second segment of a pair always gets token type id 1. The saved tokenizer never truncates or pads by
itself: :meth:`Tokenizer.encode_batch` returns raw ids, :meth:`Tokenizer.encode_pairs` truncates explicitly.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer as _HFTokenizer

from warmstart.errors import WarmstartError
from warmstart.tokenization import leftovers
from warmstart.tokenization.vocab_ids import read_checked

# Special tokens per algorithm, in id order, mapped to their roles.
SPECIAL_TOKENS: dict[str, dict[str, str]] = {
    "wordpiece": {
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "mask_token": "[MASK]",
    },
    "bpe": {
        "bos_token": "<s>",
        "pad_token": "<pad>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "mask_token": "<mask>",
    },
    "unigram": {
        "pad_token": "<pad>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "mask_token": "<mask>",
    },
    "word": {
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "bos_token": "<S>",
        "eos_token": "</S>",
        "mask_token": "[MASK]",
    },
}
# RoBERTa also names <s> and </s> as cls/sep; transformers expects those roles for a RoBERTa-style tokenizer.
EXTRA_ROLES = {
    "bpe": {"cls_token": "<s>", "sep_token": "</s>"},
    "word": {"cls_token": "<S>", "sep_token": "</S>"},
}

ROLES = ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token", "bos_token", "eos_token")
_TRAIN_CMD = "train one with `warmstart tokenizer train ...`"


def write_atomic(out_dir: Path, write) -> None:
    """Write files via ``write(tmp_dir)`` into a temp dir next to ``out_dir`` (``.NAME.tmp-PID@HOST-RANDOM``),
    then move them into place; the temp dirs of earlier writers killed outright go first (leftovers.py)."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for stale in leftovers.dead_writers(out_dir.parent, f".{out_dir.name}.tmp-", suffix=True):
        shutil.rmtree(stale, ignore_errors=True)
    prefix = f".{out_dir.name}.tmp-{leftovers.tag()}-"
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=out_dir.parent))
    try:
        write(tmp)
        if not out_dir.exists():
            os.replace(tmp, out_dir)
            return
        # The directory exists (maybe with other files, e.g. a checkpoint): replace file by file,
        # tokenizer.json last so its presence implies the other two are complete.
        for name in sorted(os.listdir(tmp), key=lambda n: n == "tokenizer.json"):
            os.replace(tmp / name, out_dir / name)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


class Tokenizer:
    """A ``tokenizers.Tokenizer`` plus the roles of its special tokens (pad/unk/cls/sep/mask/bos/eos)."""

    def __init__(
        self,
        backend: _HFTokenizer,
        roles: dict[str, str] | None = None,
        *,
        do_lower_case: bool | None = None,
        model_max_length: int = 512,
    ):
        self._tok = backend
        self._tok.no_truncation()
        self._tok.no_padding()
        self._pair_tok: _HFTokenizer | None = None
        self._pair_max: int | None = None
        self.model_max_length = int(model_max_length)
        model_type = (json.loads(backend.to_str()).get("model") or {}).get("type", "")
        algorithms = {"WordPiece": "wordpiece", "BPE": "bpe", "Unigram": "unigram", "WordLevel": "word"}
        self.algorithm = algorithms.get(model_type, model_type)
        vocab = backend.get_vocab(with_added_tokens=True)
        if roles is None:
            roles = _guess_roles(vocab)
        self.roles = {r: t for r, t in roles.items() if r in ROLES and t is not None and t in vocab}
        if do_lower_case is None:
            do_lower_case = _guess_lowercase(backend)
        self.do_lower_case = bool(do_lower_case)

    # ------------------------------------------------------------------ loading and saving
    @classmethod
    def load(cls, path: str | os.PathLike) -> Tokenizer:
        """Load a directory holding ``tokenizer.json`` (ideally with ``tokenizer_config.json``) or a file."""
        path = Path(path)
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise WarmstartError(f"no tokenizer found at {path} (tokenizer.json is missing)", _TRAIN_CMD)
        text = read_checked(file, _TRAIN_CMD)  # ids bounded before tokenizers sizes its tables by them
        try:
            backend = _HFTokenizer.from_str(text)
        except Exception as exc:
            raise WarmstartError(f"{file} is not a valid tokenizer.json ({exc})", _TRAIN_CMD) from exc
        roles = None
        do_lower_case = None
        max_len = 512
        config = file.parent / "tokenizer_config.json"
        if config.is_file():
            try:
                cfg = json.loads(config.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
                raise WarmstartError(f"{config} is not valid JSON ({exc})", _TRAIN_CMD) from None
            if not isinstance(cfg, dict):
                raise WarmstartError(f"{config} does not hold a JSON object", _TRAIN_CMD)
            found = {r: _token_str(cfg.get(r)) for r in ROLES if cfg.get(r) is not None}
            if found:
                roles = found
            do_lower_case = cfg.get("do_lower_case")
            m = cfg.get("model_max_length")
            if isinstance(m, int) and 0 < m < 10**9:
                max_len = m
        return cls(backend, roles, do_lower_case=do_lower_case, model_max_length=max_len)

    def save(self, out_dir: str | os.PathLike) -> Path:
        """Write tokenizer.json, tokenizer_config.json and special_tokens_map.json into ``out_dir``."""
        out_dir = Path(out_dir)
        write_atomic(out_dir, self.write_files)
        return out_dir

    def write_files(self, directory: Path) -> None:
        """Write the three files straight into ``directory`` (``save`` goes through a temp dir)."""
        self._tok.no_truncation()
        self._tok.no_padding()
        self._tok.save(str(directory / "tokenizer.json"))
        special_map = self.special_tokens_map
        config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "model_max_length": self.model_max_length,
            "do_lower_case": self.do_lower_case,
            "clean_up_tokenization_spaces": False,
            **special_map,
        }
        # transformers' own BOS/EOS insertion would duplicate what the post-processor adds.
        if self.algorithm == "bpe" or "bos_token" in special_map or "eos_token" in special_map:
            config["add_bos_token"] = False
            config["add_eos_token"] = False
        for name, obj in (("tokenizer_config.json", config), ("special_tokens_map.json", special_map)):
            (directory / name).write_text(
                json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )

    # ------------------------------------------------------------------ vocabulary and roles
    @property
    def backend(self) -> _HFTokenizer:
        """The wrapped ``tokenizers.Tokenizer`` (offsets, word ids, ...). Do not enable truncation on it."""
        return self._tok

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        return self._tok.get_vocab(with_added_tokens=True)

    @property
    def special_tokens_map(self) -> dict[str, str]:
        """Role -> token string, as in special_tokens_map.json (pass as kwargs to transformers tokenizers)."""
        return {r: self.roles[r] for r in ROLES if r in self.roles}

    def to_transformers(self):
        """A ``transformers.PreTrainedTokenizerFast`` with the same pipeline and special-token roles."""
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast(
            tokenizer_object=_HFTokenizer.from_str(self._tok.to_str()),
            model_max_length=self.model_max_length,
            **self.special_tokens_map,
        )

    def _role_id(self, role: str) -> int | None:
        token = self.roles.get(role)
        return None if token is None else self._tok.token_to_id(token)

    @property
    def pad_id(self) -> int | None:
        return self._role_id("pad_token")

    @property
    def unk_id(self) -> int | None:
        return self._role_id("unk_token")

    @property
    def mask_id(self) -> int | None:
        return self._role_id("mask_token")

    @property
    def cls_id(self) -> int | None:
        return self._role_id("cls_token")

    @property
    def sep_id(self) -> int | None:
        return self._role_id("sep_token")

    @property
    def bos_id(self) -> int | None:
        return self._role_id("bos_token")

    @property
    def eos_id(self) -> int | None:
        return self._role_id("eos_token")

    @property
    def special_ids(self) -> frozenset[int]:
        ids = {self._tok.token_to_id(t) for t in self.roles.values()}
        ids.update(i for i, t in self._tok.get_added_tokens_decoder().items() if t.special)
        ids.discard(None)
        return frozenset(ids)

    @property
    def doc_sep_id(self) -> int:
        """The id put between documents in packed token streams: [SEP] for wordpiece, </s> otherwise."""
        order = ("sep_id", "eos_id") if self.algorithm == "wordpiece" else ("eos_id", "sep_id")
        for name in order:
            value = getattr(self, name)
            if value is not None:
                return value
        raise WarmstartError(
            "the tokenizer has neither a separator nor an end-of-sequence token", "train one with warmstart"
        )

    def fingerprint(self) -> str:
        """A short stable hash of the vocabulary (token -> id), to detect tokenizer/model mismatches."""
        items = sorted(self.get_vocab().items(), key=lambda kv: (kv[1], kv[0]))
        blob = json.dumps(items, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:16]

    def token_to_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    def id_to_token(self, idx: int) -> str | None:
        return self._tok.id_to_token(int(idx))

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        shown = f"algorithm={self.algorithm!r}, vocab_size={self.vocab_size}"
        return f"Tokenizer({shown}, fingerprint={self.fingerprint()!r})"

    # ------------------------------------------------------------------ encoding
    def encode(self, text: str) -> list[int]:
        """Ids of one text without special tokens and without truncation."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Ids of each text without special tokens and without truncation (parallel across cores)."""
        if isinstance(texts, str):
            raise TypeError("encode_batch expects a list of texts, not one string")
        return [e.ids for e in self.encodings(texts)]

    def encodings(self, texts: Sequence[str]) -> list:
        """The `tokenizers` Encodings of ``texts`` (no special tokens, no truncation): the part of
        ``encode_batch`` that runs without Python's lock (data/batch_pipeline.py overlaps it)."""
        if isinstance(texts, str):
            raise TypeError("encodings expects a list of texts, not one string")
        encode = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)  # no offsets: ~20% faster
        return encode(list(texts), add_special_tokens=False)

    def encode_pairs(
        self,
        texts: Sequence[str],
        pairs: Sequence[str] | None = None,
        max_length: int = 512,
    ) -> tuple[list[list[int]], list[list[int]]]:
        """Input ids and token type ids WITH special tokens, truncated (longest first) to ``max_length``."""
        if isinstance(texts, str):
            raise TypeError("encode_pairs expects a list of texts, not one string")
        texts = list(texts)
        needed = self._tok.num_special_tokens_to_add(pairs is not None) + (2 if pairs is not None else 1)
        if max_length < needed:
            raise WarmstartError(
                f"max_length {max_length} is too short for the special tokens", f"use at least {needed}"
            )
        tok = self._truncating(max_length)
        if pairs is None:
            encs = tok.encode_batch(texts, add_special_tokens=True)
        else:
            pairs = list(pairs)
            if len(pairs) != len(texts):
                raise ValueError(f"{len(texts)} texts but {len(pairs)} pairs")
            encs = tok.encode_batch(list(zip(texts, pairs)), add_special_tokens=True)
        return [e.ids for e in encs], [e.type_ids for e in encs]

    def _truncating(self, max_length: int) -> _HFTokenizer:
        # A private copy keeps the shared backend free of truncation settings.
        if self._pair_tok is None:
            self._pair_tok = _HFTokenizer.from_str(self._tok.to_str())
            self._pair_tok.no_padding()
        if self._pair_max != max_length:
            self._pair_tok.enable_truncation(max_length, strategy="longest_first")
            self._pair_max = max_length
        return self._pair_tok

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def decode_batch(self, batch: Sequence[Sequence[int]], skip_special_tokens: bool = True) -> list[str]:
        return self._tok.decode_batch(
            [[int(i) for i in ids] for ids in batch], skip_special_tokens=skip_special_tokens
        )


def _token_str(value) -> str | None:
    """A special token from tokenizer_config.json: a string or an AddedToken dict."""
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


def _guess_roles(vocab: dict[str, int]) -> dict[str, str]:
    """Roles for a bare tokenizer.json (no tokenizer_config.json) from well-known token strings."""
    candidates = {
        "pad_token": ("[PAD]", "<pad>"),
        "unk_token": ("[UNK]", "<unk>"),
        "cls_token": ("[CLS]",),
        "sep_token": ("[SEP]",),
        "mask_token": ("[MASK]", "<mask>"),
        "bos_token": ("<s>", "<|endoftext|>"),
        "eos_token": ("</s>", "<|endoftext|>"),
    }
    roles = {}
    for role, options in candidates.items():
        for token in options:
            if token in vocab:
                roles[role] = token
                break
    if "cls_token" not in roles and "bos_token" in roles and "mask_token" in roles:
        roles["cls_token"], roles["sep_token"] = roles["bos_token"], roles.get("eos_token")
    return {r: t for r, t in roles.items() if t is not None}


def _guess_lowercase(backend: _HFTokenizer) -> bool:
    state = json.loads(backend.to_str()).get("normalizer") or {}

    def walk(node) -> bool:
        if not isinstance(node, dict):
            return False
        if node.get("type") == "Lowercase" or (
            node.get("type") == "BertNormalizer" and node.get("lowercase")
        ):
            return True
        return any(walk(n) for n in node.get("normalizers", []) or [])

    return walk(state)
