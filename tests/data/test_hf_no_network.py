"""`hf:NAME` on a machine whose resolver does not know the hub (no network, a sandbox, CI here) with no
offline variable set: taken as offline at once, as HF_HUB_OFFLINE=1 would be, instead of `datasets` asking
the hub through about 25 s of retries before its cache or its error. The real `datasets` and
`huggingface_hub`; name lookups are counted."""

from __future__ import annotations

import socket
import sys
import time
import types

import pytest

from warmstart.data import hf_hub
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError


@pytest.fixture
def no_network(monkeypatch):
    """No offline variable, no proxy, a resolver that knows no name; the lookups it was asked."""
    lookups = []

    def unknown(host, *args, **kwargs):
        lookups.append(host)
        raise socket.gaierror(-2, "Name or service not known")

    for name in (*hf_hub.OFFLINE, *hf_hub.PROXIES, "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hf_hub, "_PROBED", {})
    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    return lookups


def test_an_unresolvable_hub_is_offline_at_once(no_network, capsys):
    import datasets
    import huggingface_hub.constants as hub

    before = datasets.config.HF_HUB_OFFLINE, hub.HF_HUB_OFFLINE
    start = time.perf_counter()
    with pytest.raises(WarmstartError, match="could not load hf:imdb: .*OfflineModeIsEnabled"):
        open_dataset("hf:imdb")
    assert time.perf_counter() - start < 10  # 25 s of retries before
    assert no_network == ["huggingface.co"]  # one lookup: the probe's, none from `datasets`
    assert "huggingface.co cannot be resolved here: reading the Hugging Face cache" in capsys.readouterr().err
    assert (datasets.config.HF_HUB_OFFLINE, hub.HF_HUB_OFFLINE) == before
    with pytest.raises(WarmstartError):
        open_dataset("hf:imdb")
    assert no_network == ["huggingface.co"]  # probed once a process


def test_an_unresolvable_hub_reads_a_corpus_from_the_cache_whole(no_network, monkeypatch):
    calls = []

    def load(name, config=None, streaming=False):
        calls.append(streaming)
        raise FileNotFoundError(f"{name} is not in the cache")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load))
    with pytest.raises(WarmstartError, match="not in the cache"):
        open_dataset("hf:wikitext", DataOptions(label_column=None))
    assert calls == [False]  # no stream was tried: a stream needs the hub


def test_a_proxy_or_a_mirror_decides_what_is_probed(no_network, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert hf_hub.no_hub("hf:x", "x") is False and no_network == []  # the proxy resolves names
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.example.org")
    assert hf_hub.no_hub("hf:x", "x") is True and no_network == ["hf-mirror.example.org"]


def test_a_local_folder_is_never_probed(no_network, tmp_path):
    assert hf_hub.no_hub(f"hf:{tmp_path}", str(tmp_path)) is False and no_network == []


def test_a_resolvable_hub_is_left_to_datasets(no_network, monkeypatch):
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda host, *a, **k: [(socket.AF_INET, 1, 6, "", ("1.2.3.4", 443))]
    )
    assert hf_hub.no_hub("hf:x", "x") is False
