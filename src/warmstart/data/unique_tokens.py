"""``data.max_tokens``: pretraining on the first N tokens of the train split, repeated to fill the steps, and
the account of what that means (T5's Table 9: fewer unique tokens, more repeats).

The limit cuts the split's token stream (:meth:`TokenShards.head`), so packed windows are the first
``N // width`` windows of the stream (rounded down to whole windows), NSP/SOP pairs come from the documents
inside the first N tokens, and the data order is the one pretraining always uses: a fresh seeded permutation
of those windows every epoch. The account, written to ``RUN/unique_tokens.json`` and said in the log:
unique tokens (the windows' tokens), examples seen (steps x grad_accum x the global batch) and repeats =
examples seen / examples (= tokens seen / unique tokens for packed windows: the epochs over the limited set).
"""

from __future__ import annotations

import json
from pathlib import Path

from warmstart.atomic import write_atomic
from warmstart.data.shards import TokenShards
from warmstart.errors import WarmstartError

ACCOUNT_FILE = "unique_tokens.json"


def first_tokens(shards: TokenShards, max_tokens: int | None) -> tuple[TokenShards, str | None]:
    """(the split cut to its first ``max_tokens`` tokens, a note when the limit is above the split's size
    and so changes nothing); None: the whole split, no note."""
    if max_tokens is None:
        return shards, None
    note = None
    if max_tokens > shards.num_tokens:
        note = (
            f"data.max_tokens={max_tokens:,} is more than the {shards.num_tokens:,} tokens of the train "
            "split: pretraining on all of them (the limit changes nothing)"
        )
    return shards.head(max_tokens), note


def too_few(max_tokens: int, problem: str) -> WarmstartError:
    """The error of a limit that leaves no training example (``problem``: what the data said)."""
    return WarmstartError(
        f"data.max_tokens={max_tokens:,} is too few tokens: {problem}",
        "raise data.max_tokens to at least one batch of windows (train.batch_size x data.seq_len tokens)",
    )


def check_batch(windows, max_tokens: int, batch: int) -> None:
    """WarmstartError when the limited split holds fewer examples than one (global) batch."""
    if len(windows) >= batch:
        return
    width = getattr(windows, "width", None)
    what = f"windows of {width} tokens" if width else "examples"
    need = f"data.max_tokens={batch * width:,} or more" if width else "a higher data.max_tokens"
    raise WarmstartError(
        f"data.max_tokens={max_tokens:,} gives {len(windows)} training {what}, "
        f"fewer than one batch of {batch}",
        f"use {need}, or a smaller train.batch_size",
    )


def account(
    windows, limited: TokenShards, split_tokens: int, max_tokens: int, batch: int, steps: int, grad_accum: int
) -> dict:
    """Unique tokens and repeats of ``steps`` steps of ``grad_accum`` micro-batches of ``batch`` examples
    over ``windows`` (made from ``limited``, the first ``max_tokens`` of a split of ``split_tokens``)."""
    width = getattr(windows, "width", None)  # packed windows; NSP/SOP pairs have no fixed width
    unique = len(windows) * width if width else limited.num_tokens
    base = {
        "max_tokens": max_tokens,
        "split_tokens": split_tokens,
        "limited": max_tokens < split_tokens,
        "examples": len(windows),
        "example_tokens": width,
        "unique_tokens": unique,
        "grad_accum": grad_accum,
        "batch": batch,
    }
    return at_steps(base, steps)


def at_steps(acc: dict, steps: int) -> dict:
    """The account of a run that ended after ``steps`` (train.time_budget plans fewer than train.steps)."""
    seen = steps * acc["grad_accum"] * acc["batch"]
    width = acc["example_tokens"]
    return {**acc, "steps": steps, "examples_seen": seen, "tokens_seen": seen * width if width else None,
            "repeats": seen / acc["examples"]}  # fmt: skip


def describe(acc: dict) -> str:
    """One line for the log: the unique tokens of the limit and the repeats of the run."""
    width = acc["example_tokens"]
    what = f"windows of {width} tokens" if width else "sentence pairs"
    rounded = " (rounded down to whole windows)" if width else ""
    accum = f" x {acc['grad_accum']}" if acc["grad_accum"] > 1 else ""
    return (
        f"data.max_tokens={acc['max_tokens']:,}: {acc['examples']:,} {what} = {acc['unique_tokens']:,} "
        f"unique tokens{rounded} of the train split's {acc['split_tokens']:,}; {acc['steps']:,} steps{accum} "
        f"x {acc['batch']} = {acc['examples_seen']:,} examples seen = {acc['repeats']:.3g} repeats"
    )


def write_account(run_dir: Path, acc: dict) -> None:
    write_atomic(Path(run_dir) / ACCOUNT_FILE, lambda f: f.write(json.dumps(acc, indent=1) + "\n"), text=True)


def read_account(run_dir: Path) -> dict | None:
    """RUN/unique_tokens.json, or None for a run without data.max_tokens."""
    path = Path(run_dir) / ACCOUNT_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
