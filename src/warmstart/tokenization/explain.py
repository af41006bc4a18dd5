"""How a subword tokenizer cuts each word of a text, step by step, replayed from its tokenizer.json.

The text goes through the tokenizer's own pipeline up to the model: added tokens (``<mask>``,
``<|endoftext|>``...) are split off, the rest is normalized (lowercasing, accents, NFKC...) and pre-tokenized
into words (byte-level: the bytes written as GPT-2's printable alphabet, ``Ġ`` for a space; Metaspace: ``▁``
before a word). Then each word is cut by a replay of the model from the parameters saved in tokenizer.json:

- BPE (bpe_steps.py): the merges applied, in order, each with its rank in the merge list;
- WordPiece (wordpiece_steps.py): the greedy longest-match-first pieces, or why the word became [UNK];
- Unigram (unigram_steps.py): the Viterbi pieces with their log-probability scores and the total, and the
  next-best segmentations with theirs.

The replay is checked against the tokenizer's own ``encode`` (tests/tokenization/test_explain.py): the
pieces it ends with are the ids encoding gives. WordLevel has nothing to explain (a word is in the
vocabulary or unknown) and is refused with the other types.
"""

from __future__ import annotations

import json
import re

from warmstart.errors import WarmstartError
from warmstart.tokenization.bpe_steps import BpeSteps
from warmstart.tokenization.byte_level import readable
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.unigram_steps import UnigramSteps
from warmstart.tokenization.wordpiece_steps import WordPieceSteps

REPLAYS = {"BPE": BpeSteps, "WordPiece": WordPieceSteps, "Unigram": UnigramSteps}


def _has_type(node, name: str) -> bool:
    """Whether a tokenizer.json component (or one inside a Sequence) is of type ``name``."""
    if isinstance(node, dict):
        if node.get("type") == name:
            return True
        return any(_has_type(v, name) for v in node.values() if isinstance(v, (dict, list)))
    if isinstance(node, list):
        return any(_has_type(v, name) for v in node)
    return False


def model_section(state: dict) -> dict:
    """The ``model`` section of a tokenizer.json; WarmstartError for a type with no steps to show."""
    model = state.get("model") or {}
    model_type = model.get("type") or "unknown"
    if model_type not in REPLAYS:
        raise WarmstartError(
            f"cannot explain a {model_type} tokenizer: it has no subword segmentation to show"
            + (" (a word is in its vocabulary or unknown)" if model_type == "WordLevel" else ""),
            "pass a BPE, WordPiece or Unigram tokenizer",
        )
    return model


def _added_pattern(tokens, normalized: bool) -> re.Pattern | None:
    """A regex matching the added tokens matched before (``normalized`` False) or after normalization:
    the longest first, with the spaces their ``lstrip`` / ``rstrip`` take and ``single_word`` bounds."""
    alts = []
    for t in sorted(tokens, key=lambda t: -len(t.content)):
        if bool(t.normalized) != normalized or not t.content:
            continue
        body = re.escape(t.content)
        if t.single_word:
            body = rf"(?<!\w){body}(?!\w)"
        alts.append(("\\s*" if t.lstrip else "") + body + ("\\s*" if t.rstrip else ""))
    return re.compile("|".join(alts)) if alts else None


def _split(pattern: re.Pattern | None, text: str) -> list[tuple[str, bool]]:
    """``text`` cut into (part, is_added_token) around the matches of ``pattern``."""
    if pattern is None:
        return [(text, False)] if text else []
    parts, at = [], 0
    for m in pattern.finditer(text):
        if m.start() == m.end():
            continue
        if m.start() > at:
            parts.append((text[at : m.start()], False))
        parts.append((m.group(0), True))
        at = m.end()
    if at < len(text):
        parts.append((text[at:], False))
    return parts


def words_of(tokenizer: Tokenizer, text: str) -> tuple[list[dict], str]:
    """The text as the model receives it, and the whole text normalized (added tokens as they are): a list
    of {"word", "span"} (a pre-tokenized word and where it is in the normalized text) and {"added": token}
    (an added token, matched before the model)."""
    backend = tokenizer.backend
    added = list(backend.get_added_tokens_decoder().values())
    raw_added, norm_added = _added_pattern(added, False), _added_pattern(added, True)
    out: list[dict] = []
    whole = ""
    for part, is_added in _split(raw_added, text):
        if is_added:
            out.append({"added": part})
            whole += part
            continue
        normalized = backend.normalizer.normalize_str(part) if backend.normalizer else part
        for piece, piece_added in _split(norm_added, normalized):
            if piece_added:
                out.append({"added": piece})
            elif backend.pre_tokenizer is None:
                out.append({"word": piece, "span": [len(whole), len(whole) + len(piece)]})
            else:
                for word, (a, b) in backend.pre_tokenizer.pre_tokenize_str(piece):
                    if word:
                        out.append({"word": word, "span": [len(whole) + a, len(whole) + b]})
            whole += piece
    return out, whole


class Explainer:
    """The replay of one tokenizer's model, built once (GPT-2's 50,000 merges take a moment) and used for
    any number of texts."""

    def __init__(self, tokenizer: Tokenizer, alternatives: int = 2):
        if int(alternatives) < 0:
            raise WarmstartError(f"alternatives {alternatives} is negative", "use 0 or more (2 is usual)")
        state = json.loads(tokenizer.backend.to_str())
        model = model_section(state)
        self.tokenizer = tokenizer
        self.model_type = model["type"]
        self.replay = (
            UnigramSteps(model, alternatives)
            if self.model_type == "Unigram"
            else REPLAYS[self.model_type](model)
        )
        self.byte_level = _has_type(state.get("pre_tokenizer"), "ByteLevel")
        self.info = {
            "type": self.model_type,
            "byte_level": self.byte_level,
            "vocab_size": tokenizer.vocab_size,
            "lowercase": tokenizer.do_lower_case,
            "notes": self.replay.notes(),
        }
        if self.model_type == "BPE":
            self.info["merges"] = len(model.get("merges") or [])

    def explain(self, text: str) -> dict:
        """Each word of ``text`` and how the model cuts it (see the module docstring), as plain data (what
        ``--json`` prints): ``words`` (one dict each), and all ``pieces`` and ``ids`` in order."""
        words = []
        items, normalized = words_of(self.tokenizer, text)
        for item in items:
            if "added" in item:
                content = item["added"].strip() or item["added"]
                words.append(
                    {"added": content, "pieces": [content], "ids": [self.tokenizer.token_to_id(content)]}
                )
                continue
            step = {**item, **self.replay.explain(item["word"])}
            if self.byte_level:
                step["readable"] = readable(item["word"])
            words.append(step)
        return {
            "tokenizer": self.info,
            "text": text,
            "normalized": normalized,
            "words": words,
            "pieces": [p for w in words for p in w["pieces"]],
            "ids": [i for w in words for i in w["ids"]],
        }


def explain(tokenizer: Tokenizer, text: str, alternatives: int = 2) -> dict:
    """:meth:`Explainer.explain` of one text; ``alternatives``: how many next-best Unigram segmentations."""
    return Explainer(tokenizer, alternatives).explain(text)
