"""Unigram's Viterbi segmentation with its scores, and the next-best segmentations for contrast.

A Unigram model (Kudo 2018; T5, ALBERT, XLNet via SentencePiece) gives every piece a score, the log of
its probability. A word can be cut into pieces of the vocabulary in many ways; the model takes the one
whose scores sum highest (the most probable sequence of independent pieces), found by Viterbi over the
lattice of all pieces that occur in the word. A character that no single-character piece covers gets the
unknown token with the score (lowest score in the vocabulary - 10), and neighbouring unknown characters
are fused into one unknown token, as the ``tokenizers`` library does. On a tie the ``tokenizers`` library
keeps the path whose last piece starts earliest; so does this replay.
"""

from __future__ import annotations

from warmstart.errors import WarmstartError

UNK_PENALTY = 10.0  # tokenizers' K_UNK_PENALTY (and SentencePiece's kUnkPenalty)
NODE = tuple[int, int, int, float]  # (start, end, id, score) of one piece in the word


class UnigramSteps:
    """The Viterbi segmentation of words by one Unigram model (its tokenizer.json ``model`` section)."""

    def __init__(self, model: dict, alternatives: int = 2):
        self.pieces: list[tuple[str, float]] = [(str(p), float(s)) for p, s in model.get("vocab") or []]
        self.ids = {p: i for i, (p, _) in enumerate(self.pieces)}  # a piece listed twice: the last id
        self.unk_id = model.get("unk_id")
        self.byte_fallback = bool(model.get("byte_fallback"))
        self.min_score = min((s for _, s in self.pieces), default=0.0)
        self.longest = max((len(p) for p, _ in self.pieces), default=1)
        self.alternatives = alternatives

    def notes(self) -> list[str]:
        unk = self.min_score - UNK_PENALTY
        return [
            "a piece's score is its log-probability; a segmentation's score is their sum; the highest wins",
            f"an unknown character scores {unk:.2f} (the lowest piece score - {UNK_PENALTY:g})",
        ]

    def _nodes(self, word: str) -> list[list[NODE]]:
        """The lattice: for each start, the pieces that begin there (shortest first), or the unknown token."""
        unk_score = self.min_score - UNK_PENALTY
        lattice: list[list[NODE]] = []
        for start in range(len(word)):
            nodes = []
            for end in range(start + 1, min(len(word), start + self.longest) + 1):
                i = self.ids.get(word[start:end])
                if i is not None:
                    nodes.append((start, end, i, self.pieces[i][1]))
            if not any(end == start + 1 for _, end, _, _ in nodes):
                if self.unk_id is None:
                    raise WarmstartError(
                        f"{word[start]!r} is in no piece and the Unigram model has no unknown token",
                        "train the tokenizer with an unk_token",
                    )
                nodes.append((start, start + 1, int(self.unk_id), unk_score))
            lattice.append(nodes)
        return lattice

    def best_paths(self, word: str, k: int) -> tuple[list[tuple[float, list[NODE]]], int]:
        """The ``k`` best segmentations as (total score, nodes), best first (a tie resolved as tokenizers
        resolves it for the best), and how many segmentations the lattice holds in all."""
        lattice = self._nodes(word)
        best: list[list[tuple[float, tuple[NODE, ...]]]] = [[(0.0, ())]] + [[] for _ in word]
        count = [1] + [0] * len(word)
        for start, nodes in enumerate(lattice):
            # Every path ending at `start` is in by now (they come from earlier starts, in start order):
            # a stable sort keeps, among equal totals, the one whose last piece starts earliest.
            best[start] = sorted(best[start], key=lambda tp: -tp[0])[:k]
            for node in nodes:
                _, end, _, score = node
                count[end] += count[start]
                best[end].extend((score + total, path + (node,)) for total, path in best[start])
        paths = sorted(best[len(word)], key=lambda tp: -tp[0])[:k]
        return [(total, list(path)) for total, path in paths], count[len(word)]

    def _segmentation(self, word: str, total: float, path: list[NODE]) -> dict:
        return {
            "pieces": [word[s:e] for s, e, _, _ in path],
            "unknown": [i == self.unk_id for _, _, i, _ in path],
            "scores": [score for _, _, _, score in path],
            "total": total,
        }

    def explain(self, word: str) -> dict:
        """``best`` (pieces, scores, total), ``alternatives`` (the next best, each the same form),
        ``segmentations`` (how many there are), and the final ``pieces`` and ``ids`` (unknown characters
        fused, byte fallback applied) as encoding gives them."""
        if not word:
            return {"best": None, "alternatives": [], "segmentations": 0, "pieces": [], "ids": []}
        paths, count = self.best_paths(word, 1 + self.alternatives)
        pieces, ids = self._final(word, paths[0][1])
        return {
            "best": self._segmentation(word, *paths[0]),
            "alternatives": [self._segmentation(word, *p) for p in paths[1:]],
            "segmentations": count,
            "pieces": pieces,
            "ids": ids,
        }

    def _final(self, word: str, path: list[NODE]) -> tuple[list[str], list[int]]:
        """The best path as tokens: neighbouring unknown characters fused, then looked up again (a fused
        string can be a piece), with byte fallback to ``<0xHH>`` pieces where the model has it."""
        strings: list[str] = []
        fusing = False
        for s, e, i, _ in path:
            if i == self.unk_id and fusing:
                strings[-1] += word[s:e]
            else:
                strings.append(word[s:e])
            fusing = i == self.unk_id
        pieces, ids = [], []
        for text in strings:
            if text in self.ids:
                pieces.append(text)
                ids.append(self.ids[text])
                continue
            fallback = [f"<0x{b:02X}>" for b in text.encode("utf-8")]
            if self.byte_fallback and all(f in self.ids for f in fallback):
                pieces.extend(fallback)
                ids.extend(self.ids[f] for f in fallback)
            else:
                pieces.append(self.pieces[int(self.unk_id)][0])
                ids.append(int(self.unk_id))
        return pieces, ids
