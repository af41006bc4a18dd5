"""WordPiece's greedy longest-match-first segmentation, step by step, as the ``tokenizers`` library does it.

At each position the longest prefix of the rest of the word that is in the vocabulary is taken (written
with the ``##`` continuation prefix when it does not start the word), and the search goes on after it. If
at some position not even one character is in the vocabulary, the WHOLE word becomes ``[UNK]``; so does a
word longer than ``max_input_chars_per_word`` characters (100 in BERT), without being searched at all.
"""

from __future__ import annotations

from warmstart.errors import WarmstartError


class WordPieceSteps:
    """The greedy segmentation of words by one WordPiece model (its tokenizer.json ``model`` section)."""

    def __init__(self, model: dict):
        self.vocab: dict[str, int] = dict(model.get("vocab") or {})
        self.unk: str = model.get("unk_token") or "[UNK]"
        self.prefix: str = model.get("continuing_subword_prefix") or ""
        self.max_chars = int(model.get("max_input_chars_per_word") or 100)

    def notes(self) -> list[str]:
        return [
            f"a piece that does not start its word is written with the prefix {self.prefix!r}",
            f"a word longer than {self.max_chars} characters, or one with a position where not even one "
            f"character is in the vocabulary, becomes {self.unk} as a whole",
        ]

    def _unk_id(self) -> int:
        if self.unk not in self.vocab:
            raise WarmstartError(
                f"the WordPiece unknown token {self.unk!r} is not in its vocabulary",
                "repair the tokenizer.json",
            )
        return self.vocab[self.unk]

    def explain(self, word: str) -> dict:
        """``steps`` (at each position: the piece taken and the longer candidates that were not in the
        vocabulary), ``pieces`` and ``ids``, and ``unk`` (why the word became the unknown token, or None)."""
        if len(word) > self.max_chars:
            reason = f"{len(word)} characters, more than max_input_chars_per_word = {self.max_chars}"
            return {"steps": [], "pieces": [self.unk], "ids": [self._unk_id()], "unk": reason}
        steps = []
        start = 0
        while start < len(word):
            missed = []
            piece = None
            for end in range(len(word), start, -1):
                candidate = (self.prefix if start > 0 else "") + word[start:end]
                if candidate in self.vocab:
                    piece = candidate
                    break
                missed.append(candidate)
            if piece is None:
                steps.append({"start": start, "piece": None, "missed": missed})
                reason = (
                    f"no piece of the vocabulary starts at character {start} ({missed[-1]!r} is not in it)"
                )
                return {"steps": steps, "pieces": [self.unk], "ids": [self._unk_id()], "unk": reason}
            steps.append({"start": start, "piece": piece, "missed": missed})
            start = end
        pieces = [s["piece"] for s in steps]
        return {"steps": steps, "pieces": pieces, "ids": [self.vocab[p] for p in pieces], "unk": None}
