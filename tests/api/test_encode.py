"""Sentence vectors of the real all-MiniLM-L6-v2, a transformers directory as downloaded: imported on the
fly, pooled as its modules.json declares (mean, then unit length), equal to sentence-transformers' own
encode within 1e-5, from Python and from `warmstart embed`."""

import csv

import numpy as np
import pytest

from tests.helpers.cli import run
from tests.helpers.models import minilm_dir

pytestmark = pytest.mark.integration

TEXTS = [
    "A man is eating food.",
    "The new movie is awesome, if a little long.",
    "Paris is the capital of France; its museums draw millions of visitors every year.",
    "short",
]


@pytest.fixture(scope="module")
def reference():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_dir()), device="cpu").encode(TEXTS, convert_to_numpy=True)


def test_load_encode_equals_sentence_transformers(reference, capsys, tmp_path, monkeypatch):
    import warmstart

    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path))  # a cache that has not imported it yet

    model = warmstart.load(minilm_dir())
    assert "is a transformers model: importing it into" in capsys.readouterr().err  # said, once
    assert model.task == "encoder" and model.config["model_type"] == "bert"
    assert model.card.sections["sentence"] == {"pooling": "mean", "normalize": True, "max_length": 256}
    ours = model.encode(TEXTS)
    assert ours.shape == (4, 384) and np.abs(ours - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-6)
    cls = model.encode(TEXTS, pooling="cls", normalize=False)  # asked for: the [CLS] state, as is
    assert np.abs(cls - reference).max() > 0.1
    prompted = model.encode(TEXTS, prompt="query: ")  # sentence-transformers' prompt: put before each text
    assert np.array_equal(prompted, model.encode(["query: " + t for t in TEXTS]))
    with pytest.raises(warmstart.WarmstartError, match=r"unknown keyword output_value=.* it takes texts"):
        model.encode(TEXTS, output_value="token_embeddings")  # a TypeError too, as Python raises for one
    with pytest.raises(TypeError, match=r"did you mean normalize_embeddings="):
        model.encode(TEXTS, normalise_embeddings=True)
    again = warmstart.load(minilm_dir())  # the import is reused, and not announced again
    assert again.path == model.path and "import" not in capsys.readouterr().err


def test_embed_command_uses_the_declared_pooling(reference, tmp_path, capsys):
    data = tmp_path / "texts.csv"
    with open(data, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["text"], *([t] for t in TEXTS)])
    code, out, err = run(capsys, "embed", minilm_dir(), "--data", data, "--out", tmp_path / "v.npy")
    assert code == 0, err
    assert "(last, mean, unit length)" in out and "batch/s" in err  # a progress bar with its rate
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".v.npy")] == []  # no temp file left
    vectors = np.load(tmp_path / "v.npy")
    assert np.abs(vectors - reference).max() < 1e-5
