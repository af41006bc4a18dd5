"""What ``task.max_length`` cuts: before finetuning, one line on stderr when training texts are longer than
it (they are truncated, silently in most libraries), with the share, the longest, and how much longer
settings would keep whole, up to the model's own limit. Texts and text pairs of classification and the
words of tagging; QA splits its contexts into windows instead, and is not counted here."""

from __future__ import annotations

KINDS = ("labeled", "tagging")
LONGER = (256, 512, 1024, 2048)


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
    options = [n for n in LONGER if max_length < n and (limit is None or n < limit)]
    options = options[:1] + ([limit] if limit and limit > max_length else options[1:2])
    kept = [f"{n} keeps {sum(c <= n for c in counts) / len(counts):.0%} whole" for n in options]
    if kept:
        line += (
            ": --max-length "
            + ", ".join(kept)
            + (f" ({limit}: the model's limit)" if limit in options else "")
        )
    return line


def truncation_note(kind: str, records: list[dict], tokenizer, max_length: int, model_cfg) -> str | None:
    """``truncation_line`` with the model's limit read from its config (none for relative positions)."""
    limit = (
        getattr(model_cfg, "max_length", None) if getattr(model_cfg, "position_biased_input", True) else None
    )
    return truncation_line(kind, records, tokenizer, max_length, limit)
