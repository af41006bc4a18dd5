"""Tiny real runs of each kind `warmstart serve` takes (seconds each), and an API client for a run."""

import csv
import json

import pytest

from tests.helpers.data import choice_records
from tests.helpers.shapes import SHAPES
from warmstart.cli.main import main

FAST = ["--epochs", "1", "train.progress=false", "train.batch_size=16", "evals_per_epoch=1", "--lr", "1e-3"]


def finetune(init, task: str, dataset, out, *extra):
    argv = ["finetune", "--task", task, "--init", str(init), "--dataset", str(dataset), "--out", str(out)]
    assert main(argv + FAST + list(extra)) == 0
    return out


def pretrain_tiny(arch: str, shards, out):
    from warmstart.commands.pretrain import pretrain

    flags = {"out": str(out), "arch": arch, "data": {"shards": str(shards)}, "train": {"steps": 6}}
    extra = ["data.seq_len=64", "train.batch_size=8", "train.progress=false", "train.save_every=0",
             "train.eval_every=0", "train.eval_batches=1"]  # fmt: skip
    pretrain(None, None, flags, SHAPES[arch] + extra)
    return out


@pytest.fixture(scope="session")
def classifier_run(tiny_pretrained, rt_small, tmp_path_factory):
    """rotten-tomatoes polarity (240 real snippets), one epoch from the tiny MLM run."""
    out = tmp_path_factory.mktemp("serve") / "classifier"
    return finetune(tiny_pretrained, "classification", rt_small, out, "task.max_length=48")


@pytest.fixture(scope="session")
def tagger_run(tiny_pretrained, tmp_path_factory):
    """Named entities: 30 wiki-leads documents tagged by spaCy (silver CoNLL)."""
    pytest.importorskip("spacy")
    from warmstart.data.ner_silver import build_ner_silver

    root = tmp_path_factory.mktemp("serve")
    conll = build_ner_silver(limit=30, out=root / "silver.conll", progress=False)
    return finetune(tiny_pretrained, "tagging", conll, root / "tagger", "task.max_length=64")


@pytest.fixture(scope="session")
def qa_run(tiny_pretrained, tmp_path_factory):
    out = tmp_path_factory.mktemp("serve") / "qa"
    extra = ["task.max_length=96", "task.doc_stride=32", "data.train_limit=64"]
    return finetune(tiny_pretrained, "extractive_qa", "wiki-qa", out, *extra)


@pytest.fixture(scope="session")
def choice_run(tiny_pretrained, wiki_extracts, tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    path = root / "mc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in choice_records(wiki_extracts, 40)))
    return finetune(tiny_pretrained, "multiple_choice", path, root / "mc", "task.max_length=48")


@pytest.fixture(scope="session")
def gpt2_run(bpe_shards, tmp_path_factory):
    return pretrain_tiny("gpt2", bpe_shards, tmp_path_factory.mktemp("serve") / "gpt2")


@pytest.fixture(scope="session")
def xlnet_runs(unigram_shards, rt_small, tmp_path_factory):
    """A tiny XLNet (permutation LM) and a classifier finetuned from it on 240 real review snippets."""
    root = tmp_path_factory.mktemp("serve")
    init = pretrain_tiny("xlnet", unigram_shards, root / "xlnet")
    return init, finetune(init, "classification", rt_small, root / "xlnet-cls", "task.max_length=48")


@pytest.fixture(scope="session")
def t5_text_run(unigram_shards, tmp_path_factory):
    """A tiny T5 finetuned (text_to_text) on 40 real news articles -> their headlines."""
    from warmstart.data.catalog import open_dataset

    root = tmp_path_factory.mktemp("serve")
    rows = []
    for r in open_dataset("news-headlines").records("train"):
        rows.append({"text": r["text"][:300], "target": r["target"]})
        if len(rows) == 40:
            break
    with open(root / "pairs.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["text", "target"])
        writer.writeheader()
        writer.writerows(rows)
    init = pretrain_tiny("t5", unigram_shards, root / "t5")
    extra = ["task.max_length=60", "task.max_target_length=8", "task.prefix=headline: "]
    return finetune(init, "text_to_text", root / "pairs.csv", root / "t5-text", *extra)


@pytest.fixture(scope="session")
def api():
    """``api(run, log=None, card=None, **limits)``: a test client of a new app serving ``run`` (models loaded
    once per run); ``log``: a stream for its access log, ``card``: its model card's text."""
    from fastapi.testclient import TestClient

    from warmstart.serve.app import create_app
    from warmstart.serve.limits import Limits
    from warmstart.serve.load import open_model

    models = {}

    def client(run, log=None, card=None, **limits):
        if str(run) not in models:
            models[str(run)] = open_model(str(run))
        return TestClient(create_app(models[str(run)], Limits(**limits), run.name, log, card))

    return client


@pytest.fixture(scope="session")
def running():
    """``with running(app, limits) as port``: ``app`` served by the real server of `warmstart serve`
    (serve.run.make_server: uvicorn and its connection guard) in a thread, on a free port of 127.0.0.1."""
    import contextlib
    import threading
    import time

    from warmstart.serve.run import bind, make_server

    @contextlib.contextmanager
    def serving(app, limits):
        sock = bind("127.0.0.1", 0)
        server = make_server(app, limits)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        try:
            yield sock.getsockname()[1]
        finally:
            server.should_exit = True
            thread.join(5)
            server.force_exit = True
            thread.join(5)
            sock.close()

    return serving
