"""A Hugging Face model id where a model is taken (``warmstart.load(ID)``, ``finetune --init ID``): found in
huggingface_hub's own cache when the hub cannot be reached (a real cache layout: refs/main -> a snapshot of
the real all-MiniLM-L6-v2), the same model as its folder; an id in no cache is one line, and a mistyped local
path is never sent to the hub."""

import numpy as np
import pytest

import warmstart
from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.models import minilm_dir
from warmstart.hub.hub_model import is_hub_id

pytest.importorskip("huggingface_hub")
REPO = "sentence-transformers/all-MiniLM-L6-v2"
COMMIT = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"  # a snapshot folder's name: any commit hash


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """huggingface_hub's cache holding REPO at COMMIT (links to the real files, as its blobs are linked),
    with the hub offline."""
    cache = tmp_path / "hub"
    repo = cache / ("models--" + REPO.replace("/", "--"))
    snapshot = repo / "snapshots" / COMMIT
    for f in minilm_dir().rglob("*"):
        if f.is_file():
            (snapshot / f.relative_to(minilm_dir())).parent.mkdir(parents=True, exist_ok=True)
            (snapshot / f.relative_to(minilm_dir())).symlink_to(f)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))  # read at import: set for this process too
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_a_cached_model_id_is_the_model(hf_cache, capsys):
    texts = ["A warm, funny film.", "The plot goes nowhere."]
    by_id = warmstart.load(REPO).encode(texts)
    assert f"{REPO}: the Hugging Face model in {hf_cache}" in capsys.readouterr().err
    assert np.allclose(by_id, warmstart.load(minilm_dir()).encode(texts), atol=1e-6)


def test_import_takes_a_model_id(hf_cache, tmp_path, capsys):
    code, out, err = run(capsys, "import", REPO, "--out", tmp_path / "m")
    assert code == 0, err
    assert (tmp_path / "m" / "config.json").is_file() and f"imported {REPO} into" in out


def test_an_id_in_no_cache_and_a_mistyped_path(hf_cache, tmp_path, capsys, monkeypatch):
    code, _, err = run(capsys, "finetune", "--init", "nobody/no-such-model", "--dataset", "rotten-tomatoes")
    assert_one_line_error(
        code, err, "nobody/no-such-model is not a local directory, and no model of that name"
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert is_hub_id("bert-base-uncased") and is_hub_id(REPO)
    assert not is_hub_id("runs/ft") and not is_hub_id("/abs/path") and not is_hub_id("./x")
    code, _, err = run(capsys, "finetune", "--init", "runs/ft", "--dataset", "rotten-tomatoes")
    assert_one_line_error(code, err, "no model found in runs/ft")
