"""An in-memory token stream with the reading interface of token shards (``num_tokens``, ``read``), so the
objectives' windows can be cut from text tokenized on the fly (a task's own text for auxiliary objectives)."""

from __future__ import annotations

import numpy as np


class TokenStream:
    def __init__(self, docs: list[list[int]], doc_sep_id: int):
        """The documents' ids back to back, each followed by ``doc_sep_id`` (as `warmstart prepare` does)."""
        flat: list[int] = []
        for doc in docs:
            if doc:
                flat.extend(doc)
                flat.append(doc_sep_id)
        self.ids = np.asarray(flat, dtype=np.int64)
        self.num_tokens = len(self.ids)
        self.num_docs = sum(1 for d in docs if d)

    def __len__(self) -> int:
        return self.num_tokens

    def read(self, start: int, length: int) -> np.ndarray:
        return self.ids[start : start + length]
