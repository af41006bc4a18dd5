import sys
import types

import pytest

from warmstart.data import catalog, hf_hub
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError

NAMED = ["wiki-leads", "news", "rotten-tomatoes", "wiki-topics"]


def split_keys(dataset, split):
    return [r["text"] + "\x1f" + r.get("label", "") for r in dataset.records(split)]


@pytest.mark.parametrize("name", NAMED)
def test_named_splits_partition_and_are_seeded(name):
    dataset = open_dataset(name)
    parts = {s: split_keys(dataset, s) for s in ("train", "validation", "test")}
    everything = split_keys(dataset, "all")
    assert sorted(parts["train"] + parts["validation"] + parts["test"]) == sorted(everything)
    texts = {s: {k.split("\x1f")[0] for k in v} for s, v in parts.items()}
    assert not texts["train"] & texts["test"] and not texts["train"] & texts["validation"]
    assert not texts["validation"] & texts["test"]
    assert dataset.counts() == {**{s: len(v) for s, v in parts.items()}, "all": len(everything)}
    # same seed: identical; another seed: different
    assert split_keys(open_dataset(name, DataOptions(split_seed=0)), "test") == parts["test"]
    assert split_keys(open_dataset(name, DataOptions(split_seed=1)), "test") != parts["test"]
    validation, test = (0.1, 0.1) if dataset.kind == "labeled" else (0.02, 0.01)
    n = len(everything)
    assert abs(len(parts["validation"]) / n - validation) < 0.02
    assert abs(len(parts["test"]) / n - test) < 0.02
    assert "seed 0" in dataset.split_note


def test_rotten_tomatoes():
    dataset = open_dataset("rotten-tomatoes")
    assert dataset.kind == "labeled"
    assert dataset.counts()["all"] == 12808
    assert dataset.label_counts() == {"fresh": 7403, "rotten": 5405}
    assert dataset.labels() == ["fresh", "rotten"]


def test_wiki_topics_drops_uncategorized():
    dataset = open_dataset("wiki-topics")
    labels = dataset.labels()
    assert len(labels) == 11 and "Uncategorized" not in labels
    assert "Uncategorized" in dataset.description and "Uncategorized" in dataset.split_note
    assert dataset.counts()["all"] == 10033 - 1000


def test_corpora():
    leads, news = open_dataset("wiki-leads"), open_dataset("news")
    assert leads.kind == news.kind == "corpus"
    assert leads.counts()["all"] == 10033
    assert news.counts()["all"] == 3824 - 36
    assert all(t.strip() for t in news.texts("validation"))
    with pytest.raises(WarmstartError, match="no labels"):
        leads.labels()


def test_wiki_leads_held_out_matches_wiki_topics_with_same_fractions():
    leads = open_dataset("wiki-leads", DataOptions(validation_fraction=0.1, test_fraction=0.1))
    topics = open_dataset("wiki-topics")
    assert set(topics.texts("test")) <= set(leads.texts("test"))


def test_unknown_name_suggests_close_matches():
    with pytest.raises(WarmstartError, match="unknown dataset 'rotten-tomato'.*did you mean rotten-tomatoes"):
        open_dataset("rotten-tomato")
    known = "known: wiki-leads, news, news-headlines, wiki-descriptions, rotten-tomatoes, wiki-topics"
    with pytest.raises(WarmstartError, match=known):
        open_dataset("zzz")


def test_bad_split_name():
    with pytest.raises(WarmstartError, match="unknown split 'dev'"):
        open_dataset("rotten-tomatoes").records("dev")


def test_local_files_kind_and_errors(tmp_path):
    labeled = tmp_path / "reviews.csv"
    labeled.write_text("sentence,label\n" + "".join(f"text {i},{i % 2}\n" for i in range(200)), "utf-8")
    with pytest.raises(WarmstartError, match=r"no column 'text' \(columns: sentence, label\)"):
        open_dataset(str(labeled))
    dataset = open_dataset(str(labeled), DataOptions(text_column="sentence"))
    assert dataset.kind == "labeled" and dataset.labels() == ["0", "1"]
    assert dataset.counts()["all"] == 200 and 0 < dataset.counts()["test"] < 40
    as_corpus = open_dataset(str(labeled), DataOptions(text_column="sentence", label_column=None))
    assert as_corpus.kind == "corpus" and "label" not in next(as_corpus.records())
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\n\nd e\n", "utf-8")
    assert open_dataset(str(corpus)).kind == "corpus"
    assert list(open_dataset(str(corpus)).texts()) == ["a b c", "d e"]
    with pytest.raises(WarmstartError, match="no such file: .*missing.jsonl"):
        open_dataset(str(tmp_path / "missing.jsonl"))
    with pytest.raises(WarmstartError, match="no such file"):
        open_dataset("data/missing.csv")


def test_show_contains_counts_labels_and_split_note(tmp_path):
    text = catalog.show("rotten-tomatoes", n_examples=2)
    counts = open_dataset("rotten-tomatoes").counts()
    assert f"train {counts['train']:,}" in text and "all 12,808" in text
    assert "fresh 7,403" in text and "rotten 5,405" in text
    assert "hashed split" in text and "seed 0" in text
    assert text.count("\n  ") == 2 and all(len(line) < 240 for line in text.splitlines()[-2:])
    table = catalog.list_table()
    assert all(name in table for name in NAMED) and "12,808" in table


def test_hf_without_datasets_package(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(WarmstartError, match="pip install datasets"):
        open_dataset("hf:imdb")


def fake_datasets(load):
    module = types.ModuleType("datasets")
    module.load_dataset = load
    return module


def test_hf_offline_is_one_clear_line(monkeypatch):
    def load(name, config=None):
        raise ConnectionError("Couldn't reach 'imdb' on the Hub (LocalEntryNotFoundError)\nmore detail")

    monkeypatch.setitem(sys.modules, "datasets", fake_datasets(load))
    with pytest.raises(WarmstartError) as info:
        open_dataset("hf:imdb")
    message = str(info.value)
    assert message.startswith("could not load hf:imdb: Couldn't reach") and "\n" not in message
    assert "download it and pass a local file" in message


class FakeSplit(list):
    column_names = ["text", "label"]
    features = {"label": types.SimpleNamespace(int2str=lambda i: ["neg", "pos"][i])}


def test_hf_carves_validation_from_train(monkeypatch):
    train = FakeSplit({"text": f"review {i}", "label": i % 2} for i in range(1000))
    test = FakeSplit({"text": f"test review {i}", "label": 1} for i in range(50))
    calls = []

    def load(name, config=None):
        calls.append((name, config))
        return {"train": train, "test": test}

    monkeypatch.setitem(sys.modules, "datasets", fake_datasets(load))
    dataset = open_dataset("hf:imdb:plain")
    assert calls == [("imdb", "plain")] and dataset.kind == "labeled"
    counts = dataset.counts()
    assert counts["test"] == 50 and counts["train"] + counts["validation"] == 1000
    assert 60 < counts["validation"] < 140
    assert dataset.labels() == ["neg", "pos"]
    assert "official splits: train, test" in dataset.split_note and "validation carved" in dataset.split_note
    assert not set(dataset.texts("train")) & set(dataset.texts("validation"))


def test_list_shows_an_unbuilt_derived_set_and_never_fails(test_cache):
    """A fresh machine: the derived wiki-ner-silver is not in the (test) cache; the table still prints."""
    import subprocess

    assert not (test_cache / "wiki-ner-silver").exists()
    out = subprocess.run([sys.executable, "-m", "warmstart", "data", "list"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("wiki-ner-silver"))
    assert "not built" in row and "warmstart data build wiki-ner-silver" in row
    assert "brown-pos" in out.stdout and "57,340" in out.stdout


def test_an_unreachable_hub_is_asked_once_for_a_corpus(monkeypatch):
    """A corpus is streamed; with the hub out of reach that is said at once, not asked again whole."""
    calls = []

    def load(name, config=None, streaming=False):
        calls.append(streaming)
        raise ConnectionError("Couldn't reach 'wikitext' on the Hub (ConnectionError)")

    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(flag, raising=False)
    monkeypatch.setattr(hf_hub, "no_hub", lambda what, name: False)  # the hub's name resolves: it is tried
    monkeypatch.setitem(sys.modules, "datasets", fake_datasets(load))
    with pytest.raises(WarmstartError, match="could not load hf:wikitext: Couldn't reach"):
        open_dataset("hf:wikitext", DataOptions(label_column=None))
    assert calls == [True]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline: the cache, read whole (a stream cannot be)
    with pytest.raises(WarmstartError):
        open_dataset("hf:wikitext", DataOptions(label_column=None))
    assert calls == [True, False]


def test_offline_set_after_datasets_was_imported_never_asks_the_hub(monkeypatch):
    """HF_HUB_OFFLINE set in the environment after `datasets` was imported (a notebook, this test): the real
    `datasets` and `huggingface_hub` read it at import only, and asked the hub through ~25 s of retries;
    now no address is looked up, the line comes at once, and their flags are put back after."""
    import socket

    import datasets
    import huggingface_hub.constants as hub

    lookups = []

    def no_network(host, *args, **kwargs):
        lookups.append(host)
        raise socket.gaierror(-2, "Name or service not known")

    before = datasets.config.HF_HUB_OFFLINE, hub.HF_HUB_OFFLINE
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(WarmstartError, match="could not load hf:imdb: .*OfflineModeIsEnabled"):
        open_dataset("hf:imdb")
    assert lookups == []
    assert (datasets.config.HF_HUB_OFFLINE, hub.HF_HUB_OFFLINE) == before
