"""T5 sentinel tokens ``<extra_id_0>`` ... ``<extra_id_{n-1}>`` for span corruption.

They are special added tokens, appended after the trained vocabulary in reverse order, so ``<extra_id_0>``
gets the LAST id (T5: 32,000 pieces + 100 sentinels, ``<extra_id_0>`` = 32099). Being special, they stay
one id when encoded and are in :attr:`Tokenizer.special_ids`, so no masking ever picks or samples them.
"""

from __future__ import annotations

from tokenizers import AddedToken
from tokenizers import Tokenizer as _HFTokenizer

from warmstart.errors import WarmstartError
from warmstart.tokenization.tokenizer import Tokenizer


def sentinel_token(i: int) -> str:
    return f"<extra_id_{i}>"


def add_sentinels(tokenizer: Tokenizer, n: int = 100) -> Tokenizer:
    """A Tokenizer with ``n`` sentinels added (same pipeline, roles and settings; ``tokenizer`` is left as
    it is). Idempotent: a tokenizer that already has ``<extra_id_0>`` ... ``<extra_id_{n-1}>`` comes back
    unchanged. Save the result to keep it."""
    if n < 1:
        raise WarmstartError(f"cannot add {n} sentinels", "use a positive number (T5 uses 100)")
    vocab = tokenizer.get_vocab()
    present = sum(sentinel_token(i) in vocab for i in range(n))
    if present == n:
        return tokenizer
    if present or sentinel_token(0) in vocab:
        raise WarmstartError(
            f"the tokenizer already has {present} of the {n} sentinels asked for",
            "add all sentinels at once, to a tokenizer without any (T5 uses 100)",
        )
    backend = _HFTokenizer.from_str(tokenizer.backend.to_str())
    backend.add_special_tokens(
        [AddedToken(sentinel_token(i), special=True, normalized=False) for i in reversed(range(n))]
    )
    return Tokenizer(
        backend,
        dict(tokenizer.roles),
        do_lower_case=tokenizer.do_lower_case,
        model_max_length=tokenizer.model_max_length,
    )
