"""Sentence pairs for next-sentence prediction (BERT) and sentence-order prediction (ALBERT).

Every document is cut into consecutive *chunks* of at most ``seg_len`` tokens (``(seq_len - 3) // 2`` by
default, so that ``[CLS] A [SEP] B [SEP]`` fits); a chunk never crosses a document boundary. Chunks are
numbered globally, document after document, and only per-document arrays are kept (chunk counts and their
running sums): chunk -> document is a ``searchsorted``, so memory is O(documents), not O(chunks).

An example is a chunk A that has a following chunk in its document (its *pair index*). Its *stretch* is A
followed by that next chunk; it is cut at a point drawn uniformly, so segment lengths vary and say nothing
about the label (chunks are full-length except a document's last: without the random cut, the length of
the first segment would give the order away). Draws come from the collator's generator, so pairs change
every epoch yet each step is reproducible:

- ``nsp``: B is the rest of the stretch (label 0, IsNext, as in transformers' BertForPreTraining) or, with
  probability 0.5, as many tokens read from a uniformly drawn chunk of another document (label 1, NotNext);
- ``sop``: the two parts of the stretch in order (label 0) or, with probability 0.5, swapped (label 1).
"""

from __future__ import annotations

import numpy as np
import torch

from warmstart.errors import WarmstartError

PAIR_TASKS = ("nsp", "sop")


def default_seg_len(seq_len: int) -> int:
    """The longest chunk such that two of them fit in ``seq_len`` with [CLS], [SEP], [SEP]."""
    return (seq_len - 3) // 2


class DocumentChunks:
    """Documents cut into consecutive chunks of at most ``seg_len`` tokens, indexed by per-document arrays.

    ``first[d]``: global id of document ``d``'s first chunk (``first[-1]`` = all chunks);
    ``pair_first[d]``: first pair index of document ``d`` (each chunk but a document's last is one)."""

    def __init__(self, shards, seg_len: int):
        if seg_len < 1:
            raise ValueError("seg_len must be positive")
        self.shards, self.seg_len = shards, seg_len
        n = shards.num_docs
        self.starts = np.asarray(shards.doc_offsets, dtype=np.int64)
        ends = np.empty(n, dtype=np.int64)
        ends[:-1] = self.starts[1:]
        if n:
            ends[-1] = shards.num_tokens
        self.lengths = ends - 1 - self.starts  # without the document separator
        self.counts = -(-self.lengths // seg_len)
        self.first = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(self.counts, out=self.first[1:])
        self.pair_first = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.maximum(self.counts - 1, 0), out=self.pair_first[1:])

    @property
    def num_chunks(self) -> int:
        return int(self.first[-1])

    @property
    def num_pairs(self) -> int:
        """Chunks that have a following chunk in the same document: the examples."""
        return int(self.pair_first[-1])

    @property
    def docs_with_tokens(self) -> int:
        return int((self.counts > 0).sum())

    def doc_of(self, chunks) -> np.ndarray:
        """The document of each chunk id."""
        return np.searchsorted(self.first, np.asarray(chunks, dtype=np.int64), side="right") - 1

    def pair_chunk(self, pairs) -> np.ndarray:
        """The chunk id (chunk A) of each pair index."""
        pairs = np.asarray(pairs, dtype=np.int64)
        docs = np.searchsorted(self.pair_first, pairs, side="right") - 1
        return self.first[docs] + (pairs - self.pair_first[docs])

    def span(self, chunk: int) -> tuple[int, int]:
        """(start, end) of a chunk in the split's token stream."""
        d = int(self.doc_of(chunk))
        start = int(self.starts[d]) + (int(chunk) - int(self.first[d])) * self.seg_len
        return start, min(start + self.seg_len, int(self.starts[d] + self.lengths[d]))

    def tokens(self, chunk: int) -> np.ndarray:
        start, end = self.span(chunk)
        return self.shards.read(start, end - start)

    def other_doc_chunks(self, chunks, generator: torch.Generator) -> np.ndarray:
        """For each chunk, a chunk drawn uniformly from all chunks of the *other* documents (exactly: the
        draw skips over the chunk's own document, no rejection)."""
        docs = self.doc_of(chunks)
        own = self.counts[docs]
        draws = torch.randint(0, 2**62, (len(docs),), generator=generator).numpy()
        r = draws % np.maximum(self.num_chunks - own, 1)
        return r + np.where(r >= self.first[docs], own, 0)


class PairWindows:
    """The examples of an NSP/SOP objective: ``get(indices)`` -> the A chunk ids (LongTensor) that the
    collator turns into pairs. Raises WarmstartError when the split cannot give the pair task's pairs."""

    def __init__(self, shards, seq_len: int, pair_task: str, seg_len: int | None = None):
        if pair_task not in PAIR_TASKS:
            raise ValueError(f"unknown pair task {pair_task!r}")
        seg_len = default_seg_len(seq_len) if seg_len is None else seg_len
        if seg_len < 1:
            raise WarmstartError(
                f"sequence length {seq_len} is too short for sentence pairs", "use data.seq_len of 8 or more"
            )
        self.chunks = DocumentChunks(shards, seg_len)
        split = getattr(shards, "split", "")
        if pair_task == "nsp" and self.chunks.docs_with_tokens < 2:
            raise WarmstartError(
                f"the {split} split has {self.chunks.docs_with_tokens} document(s); next-sentence prediction "
                "draws its negatives from another document",
                "use a corpus with at least two documents (one per line or record)",
            )
        if self.chunks.num_pairs == 0:
            raise WarmstartError(
                f"no document of the {split} split is longer than one segment of {seg_len} tokens, so none "
                "gives two consecutive segments",
                "use longer documents or a shorter data.seq_len",
            )

    def __len__(self) -> int:
        return self.chunks.num_pairs

    def get(self, indices) -> torch.Tensor:
        return torch.from_numpy(self.chunks.pair_chunk(np.fromiter(indices, dtype=np.int64)))


def draw_pairs(chunks: DocumentChunks, a: torch.Tensor, pair_task: str, generator: torch.Generator):
    """(A chunk ids, negative chunk ids (NSP; else -1), labels, cut fractions in [0, 1)) for chunks ``a``."""
    if pair_task not in PAIR_TASKS:
        raise ValueError(f"unknown pair task {pair_task!r}")
    a = a.long()
    flip = torch.rand(len(a), generator=generator) < 0.5
    negatives = torch.full_like(a, -1)
    if pair_task == "nsp":
        negatives = torch.where(flip, torch.from_numpy(chunks.other_doc_chunks(a.numpy(), generator)), -1)
    cut = torch.rand(len(a), generator=generator)
    return a, negatives, flip.long(), cut


def pair_segments(chunks: DocumentChunks, a: int, negative: int, label: int, cut: float, pair_task: str):
    """(first, second) token arrays of one example: A's stretch cut at ``cut``, then swapped (SOP, label 1)
    or its second part replaced by tokens of the ``negative`` chunk's document (NSP, label 1)."""
    start, _ = chunks.span(a)
    _, end = chunks.span(a + 1)
    stretch = chunks.shards.read(start, end - start)
    at = 1 + int(cut * (len(stretch) - 1))  # both parts non-empty
    first, second = stretch[:at], stretch[at:]
    if label and pair_task == "sop":
        return second, first
    if label and pair_task == "nsp":
        n_start, _ = chunks.span(negative)
        d = int(chunks.doc_of(negative))
        doc_end = int(chunks.starts[d] + chunks.lengths[d])
        second = chunks.shards.read(n_start, min(len(second), doc_end - n_start))
    return first, second


def truncate_pair(len_a: int, len_b: int, max_tokens: int) -> tuple[int, int]:
    """Lengths after BERT's truncate_seq_pair: drop tokens from the end of the longer segment (of B on a
    tie) until both fit in ``max_tokens``."""
    excess = len_a + len_b - max_tokens
    if excess <= 0:
        return len_a, len_b
    if len_a > len_b:
        cut = min(excess, len_a - len_b)
        len_a, excess = len_a - cut, excess - cut
    else:
        cut = min(excess, len_b - len_a)
        len_b, excess = len_b - cut, excess - cut
    return len_a - excess // 2, len_b - (excess - excess // 2)


def encode_pairs(
    chunks: DocumentChunks, pairs, pair_task: str, seq_len: int, cls_id: int, sep_id: int, pad_id: int
) -> dict:
    """``[CLS] A [SEP] B [SEP]`` per row for the output of ``draw_pairs``, padded with ``pad_id`` to the
    batch's longest row (at most ``seq_len``): input_ids, attention_mask, token_type_ids (1 on B [SEP])."""
    rows = []
    for a, neg, label, cut in zip(*(t.tolist() for t in pairs), strict=True):
        first, second = pair_segments(chunks, a, neg, label, cut, pair_task)
        la, lb = truncate_pair(len(first), len(second), seq_len - 3)
        rows.append((first[:la], second[:lb]))
    width = max(len(a) + len(b) + 3 for a, b in rows)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    types = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for r, (a, b) in enumerate(rows):
        n = len(a) + len(b) + 3
        ids[r, :n] = np.concatenate([[cls_id], a, [sep_id], b, [sep_id]])
        types[r, len(a) + 2 : n] = 1
        mask[r, :n] = 1
    return {
        "input_ids": torch.from_numpy(ids),
        "attention_mask": torch.from_numpy(mask),
        "token_type_ids": torch.from_numpy(types),
    }
