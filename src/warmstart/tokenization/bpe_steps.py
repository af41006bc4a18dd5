"""BPE replayed from a merge list, one merge at a time, as the ``tokenizers`` library applies it.

A word starts as its characters (for byte-level BPE: its bytes, see byte_level.py), each written as the
vocabulary spells it: ``continuing_subword_prefix`` before every symbol but the first and
``end_of_word_suffix`` after the last, when the model sets them. Then, while some adjacent pair of symbols
is in the merge list, the pair with the lowest rank (the earliest learned merge; the leftmost on a tie) is
joined. The ``tokenizers`` library does the same with a priority queue keyed by (rank, position); GPT-2's
encoder.py joins every occurrence of the best pair in one pass, which gives the same pieces.

A character missing from the vocabulary becomes the model's ``unk_token`` (consecutive ones fused into one
with ``fuse_unk``), or its ``<0xHH>`` byte tokens with ``byte_fallback``, or is dropped when the model has
no unknown token, exactly as ``tokenizers`` does. ``ignore_merges`` (Llama-3 style) takes a word found
whole in the vocabulary as one piece without merging. BPE-dropout (``dropout``) skips merges at random when
encoding; what is shown is the segmentation without dropout, and the notes say so.
"""

from __future__ import annotations

from warmstart.errors import WarmstartError


class BpeSteps:
    """The merge-by-merge segmentation of words by one BPE model (its tokenizer.json ``model`` section)."""

    def __init__(self, model: dict):
        self.vocab: dict[str, int] = dict(model.get("vocab") or {})
        self.prefix: str = model.get("continuing_subword_prefix") or ""
        self.suffix: str = model.get("end_of_word_suffix") or ""
        self.unk: str | None = model.get("unk_token")
        self.fuse_unk = bool(model.get("fuse_unk"))
        self.byte_fallback = bool(model.get("byte_fallback"))
        self.ignore_merges = bool(model.get("ignore_merges"))
        self.dropout = float(model.get("dropout") or 0.0)
        self.ranks: dict[tuple[str, str], int] = {}
        for rank, merge in enumerate(model.get("merges") or []):
            pair = tuple(merge.split(" ", 1)) if isinstance(merge, str) else tuple(merge)
            if len(pair) != 2:
                raise WarmstartError(f"merge #{rank} ({merge!r}) is not a pair", "repair the tokenizer.json")
            self.ranks[pair] = rank  # a pair listed twice: tokenizers keeps the later rank

    def notes(self) -> list[str]:
        notes = []
        if self.dropout > 0:
            notes.append(
                f"BPE-dropout {self.dropout:g} is set: encoding skips each merge with that probability, so "
                "its pieces vary from call to call; shown is the segmentation without dropout"
            )
        if self.prefix:
            notes.append(f"every symbol but a word's first starts with the prefix {self.prefix!r}")
        if self.suffix:
            notes.append(f"a word's last symbol ends with the suffix {self.suffix!r}")
        if self.ignore_merges:
            notes.append("ignore_merges: a word found whole in the vocabulary is one piece, without merges")
        return notes

    def joined(self, left: str, right: str) -> str:
        """The symbol a merge makes: the right symbol loses its continuation prefix (as many characters as
        the prefix has, as tokenizers cuts them)."""
        return left + right[len(self.prefix) :]

    def initial(self, word: str) -> tuple[list[str], list[str]]:
        """The word's first symbols and what became of characters missing from the vocabulary."""
        symbols: list[str] = []
        events: list[str] = []
        unk_pending = False  # tokenizers holds an unknown token back until a known character follows
        for i, ch in enumerate(word):
            s = (self.prefix if i > 0 else "") + ch + (self.suffix if i == len(word) - 1 else "")
            if s in self.vocab:
                if unk_pending:
                    symbols.append(self._unk())
                    unk_pending = False
                symbols.append(s)
                continue
            fallback = [f"<0x{b:02X}>" for b in s.encode("utf-8")]
            if self.byte_fallback and all(t in self.vocab for t in fallback):
                symbols.extend(fallback)
                events.append(f"{s!r} is not in the vocabulary: its bytes {' '.join(fallback)}")
            elif self.unk is not None:
                if unk_pending and not self.fuse_unk:
                    symbols.append(self._unk())
                unk_pending = True
                events.append(f"{s!r} is not in the vocabulary: {self.unk}")
            else:
                events.append(f"{s!r} is not in the vocabulary and the model has no unknown token: dropped")
        if unk_pending:
            symbols.append(self._unk())
        return symbols, events

    def _unk(self) -> str:
        if self.unk not in self.vocab:
            raise WarmstartError(
                f"the BPE model's unknown token {self.unk!r} is not in its vocabulary",
                "repair the tokenizer.json",
            )
        return self.unk

    def explain(self, word: str) -> dict:
        """``symbols`` (the start), ``steps`` (each merge: rank, left, right, merged, pieces after it),
        ``pieces`` and ``ids`` (the end), ``events`` (unknown characters)."""
        if self.ignore_merges and word in self.vocab:
            return {"symbols": [word], "steps": [], "pieces": [word], "ids": [self.vocab[word]], "events": []}
        symbols, events = self.initial(word)
        pieces = list(symbols)
        steps = []
        while len(pieces) > 1:
            best: tuple[int, int] | None = None
            for i in range(len(pieces) - 1):
                rank = self.ranks.get((pieces[i], pieces[i + 1]))
                if rank is not None and (best is None or rank < best[0]):
                    best = (rank, i)
            if best is None:
                break
            rank, i = best
            left, right = pieces[i], pieces[i + 1]
            merged = self.joined(left, right)
            if merged not in self.vocab:
                raise WarmstartError(
                    f"merge #{rank} ({left} + {right}) makes {merged!r}, which is not in the vocabulary",
                    "repair the tokenizer.json (its merges and vocab disagree)",
                )
            pieces[i : i + 2] = [merged]
            steps.append(
                {"rank": rank, "left": left, "right": right, "merged": merged, "pieces": list(pieces)}
            )
        ids = [self.vocab[p] for p in pieces]
        return {"symbols": symbols, "steps": steps, "pieces": pieces, "ids": ids, "events": events}
