"""Token ids of a user's tokenizer.json (or vocab.json) checked before ``tokenizers`` builds it.

``tokenizers`` sizes its tables by the largest id: a 43 KB file declaring one id of 2,000,000,000 costs
tens of seconds and gigabytes per load. Every id of ``model.vocab`` (a dict for WordPiece, BPE and
WordLevel; Unigram's list numbers its pieces by position) and of ``added_tokens`` must be a whole number
from 0 below a bound: twice the number of entries declared (vocabulary plus added tokens), plus ``SLACK``.
The slack leaves room for the gaps real tokenizers have (removed or reserved ids); a file whose ids pass
costs memory in proportion to its own size.
"""

from __future__ import annotations

import json
from pathlib import Path

from warmstart.errors import WarmstartError

SLACK = 1024


def read_checked(path: Path, fix: str) -> str:
    """The text of the tokenizer.json ``path``, once it reads as JSON and its ids are bounded (else a
    WarmstartError naming the file, with ``fix`` for an unreadable one)."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise WarmstartError(f"{path} is not a valid tokenizer.json ({_short(exc)})", fix) from None
    if not isinstance(data, dict):
        raise WarmstartError(f"{path} is not a valid tokenizer.json (not a JSON object)", fix)
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    vocab, added = model.get("vocab"), data.get("added_tokens")
    added = [t for t in added if isinstance(t, dict)] if isinstance(added, list) else []
    pairs = [(t.get("content"), t.get("id")) for t in added]
    if isinstance(vocab, dict):
        check_ids([*vocab.items(), *pairs], len(vocab) + len(added), path)
    else:  # Unigram: a list, ids by position; its unk_id must be one of them
        pieces = len(vocab) if isinstance(vocab, list) else 0
        check_ids(pairs, pieces + len(added), path)
        unk = model.get("unk_id")
        if unk is not None and not (_whole(unk) and 0 <= unk < max(pieces, 1)):
            raise _refused(f"{path}: the model's unk_id {str(unk)[:40]} is not one of its {pieces} pieces")
    return text


def check_ids(pairs, declared: int, path: Path) -> None:
    """Refuse a (token, id) of ``pairs`` whose id is not a whole number from 0 below ``bound(declared)``."""
    limit = bound(declared)
    for token, idx in pairs:
        if not (_whole(idx) and 0 <= idx < limit):
            raise _refused(
                f"{path}: the token {str(token)[:40]!r} has the id {str(idx)[:40]}, outside 0..{limit - 1} "
                f"(the file declares {declared} tokens; ids may reach twice that plus {SLACK}, for gaps)"
            )


def bound(declared: int) -> int:
    """The first id refused in a file of ``declared`` entries."""
    return 2 * declared + SLACK


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _refused(problem: str) -> WarmstartError:
    fix = "repair that id (a tokenizer's ids count from 0 up to about its size), or train a tokenizer with "
    return WarmstartError(problem, fix + "`warmstart tokenizer train`")


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
