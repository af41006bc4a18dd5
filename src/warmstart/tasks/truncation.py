"""What ``task.max_length`` cuts: before finetuning, one line on stderr when training texts are longer than
it (they are truncated, silently in most libraries), with the share, the longest, and how much longer
settings would keep whole, up to the model's own limit. Texts and text pairs of classification and the
words of tagging; QA splits its contexts into windows instead, and is not counted here."""

from __future__ import annotations

KINDS = ("labeled", "tagging")
LONGER = tuple(2**k for k in range(5, 15))  # 32 ... 16384: the lengths a suggestion names


def lengths(records: list[dict], tokenizer) -> list[int]:
    """Each record's length in tokens as the model reads it: its text (and pair) with the special tokens."""
    texts = [r["text"] for r in records]
    pairs = [r.get("text_pair") for r in records]
    paired = bool(records) and all(p is not None for p in pairs)
    ids, _ = tokenizer.encode_pairs([""], [""] if paired else None, 512)
    counts = [len(t) + len(ids[0]) for t in tokenizer.encode_batch(texts)]
    if paired:
        counts = [n + len(t) for n, t in zip(counts, tokenizer.encode_batch(pairs), strict=True)]
    return counts


def truncation_line(
    kind: str, records: list[dict], tokenizer, max_length: int, limit: int | None
) -> str | None:
    """The line that says how many of ``records`` (the training split) ``max_length`` cuts, or None when it
    cuts none or the task's texts are not counted; ``limit``: the model's positions (None: no limit)."""
    if kind not in KINDS or not records:
        return None
    counts = lengths(records, tokenizer)
    cut = sum(n > max_length for n in counts)
    if not cut:
        return None
    line = (
        f"task.max_length={max_length} cuts {cut:,} of {len(counts):,} training texts "
        f"({cut / len(counts):.0%}; the longest has {max(counts):,} tokens)"
    )
    options = longer(counts, max_length, limit)
    kept = [f"{n} keeps {sum(c <= n for c in counts) / len(counts):.0%} whole" for n in options]
    if kept:
        line += (
            ": --max-length "
            + ", ".join(kept)
            + (f" ({limit}: the model's limit)" if limit in options else "")
        )
    return line


def longer(counts: list[int], max_length: int, limit: int | None) -> list[int]:
    """The settings to name: the next power of two above ``max_length`` and the first that keeps 99% of the
    texts whole, else the model's ``limit`` (none named past it)."""
    steps = [n for n in LONGER if max_length < n and (limit is None or n < limit)]
    steps += [limit] if limit and limit > max_length else []
    if not steps:
        return []
    enough = next((n for n in steps if sum(c <= n for c in counts) >= 0.99 * len(counts)), None)
    return sorted({steps[0], enough or (limit or steps[0])})


def truncation_note(kind: str, records: list[dict], tokenizer, max_length: int, model_cfg) -> str | None:
    """``truncation_line`` with the model's limit read from its config (none for relative positions)."""
    limit = (
        getattr(model_cfg, "max_length", None) if getattr(model_cfg, "position_biased_input", True) else None
    )
    return truncation_line(kind, records, tokenizer, max_length, limit)
