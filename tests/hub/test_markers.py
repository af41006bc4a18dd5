"""What `warmstart export`, `warmstart import` (hf, elmo:, vectors:) and `warmstart tokenizer train` write
says so (issue 38): a ``.warmstart`` marker of its kind, and ``--overwrite`` onto a folder of the user's own
files is one line, exit 2, with the files unchanged. An on-the-fly import clears what killed imports left."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.hub.on_the_fly import warmstart_dir
from warmstart.outputs import made_by_warmstart
from warmstart.tokenization import leftovers
from warmstart.word2vec import io as vector_io
from warmstart.word2vec.vectors import WordVectors

pytestmark = pytest.mark.integration

OLD_RUN = Path(__file__).parents[1] / "fixtures" / "old_runs" / "pretrained"  # a tiny pretrained BERT run
MARKER = ".warmstart"


@pytest.fixture
def users_folder(tmp_path) -> Path:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("my notes\n", encoding="utf-8")
    (d / "data").mkdir()
    (d / "data" / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return d


def contents(root: Path) -> dict:
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def refused_over(capsys, folder: Path, *argv) -> None:
    """``warmstart ARGV --out FOLDER --overwrite`` is one line naming the folder, with nothing changed."""
    before = contents(folder)
    code, _, err = run(capsys, *argv, "--out", folder, "--overwrite")
    assert_one_line_error(code, err, str(folder), "warmstart did not make", "notes.txt")
    assert contents(folder) == before and not (folder / MARKER).exists()
    assert sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(".")) == []


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "hf"
    from warmstart.cli.main import main

    assert main(["export", str(OLD_RUN), "--out", str(out)]) == 0
    return out


def test_export_is_marked_and_overwrite_refuses_a_users_folder(exported, users_folder, capsys):
    assert made_by_warmstart(exported) == "export"
    assert json.loads((exported / MARKER).read_text())["kind"] == "export"
    refused_over(capsys, users_folder, "export", OLD_RUN)
    code, _, err = run(capsys, "export", OLD_RUN, "--out", exported, "--overwrite")  # its own: replaced
    assert code == 0, err
    assert made_by_warmstart(exported) == "export"


def test_hf_import_is_marked_and_overwrite_refuses_a_users_folder(exported, users_folder, tmp_path, capsys):
    out = tmp_path / "imported"
    code, _, err = run(capsys, "import", exported, "--out", out)
    assert code == 0, err
    assert made_by_warmstart(out) == "import" and (out / "config.json").is_file()
    refused_over(capsys, users_folder, "import", exported)


def test_vectors_import_is_marked_and_overwrite_refuses_a_users_folder(users_folder, tmp_path, capsys):
    words = ["the", "river", "flows", "north", "through", "old", "city", "paris", "capital", "france"]
    vectors = np.random.default_rng(0).normal(0, 1, (len(words), 8)).astype(np.float32)
    path = tmp_path / "vectors.txt"
    vector_io.save(WordVectors(words, vectors), path)
    out = tmp_path / "static"
    code, _, err = run(capsys, "import", f"vectors:{path}", "--out", out)
    assert code == 0, err
    assert made_by_warmstart(out) == "import"
    refused_over(capsys, users_folder, "import", f"vectors:{path}")


def elmo_release(d: Path) -> tuple[str, Path]:
    """A tiny ELMo release in bilm-tf's layout (random weights): (elmo:OPTIONS:WEIGHTS, vocab file)."""
    h5py = pytest.importorskip("h5py")
    dim, proj, cell, filters = 4, 8, 16, [[1, 4], [3, 8]]
    lstm = {"use_skip_connections": True, "projection_dim": proj, "cell_clip": 1.0, "proj_clip": 0.5,
            "dim": cell, "n_layers": 1}  # fmt: skip
    cnn = {"activation": "relu", "filters": filters, "n_highway": 1, "embedding": {"dim": dim},
           "n_characters": 262, "max_characters_per_token": 50}  # fmt: skip
    options = {"lstm": lstm, "char_cnn": cnn}
    rng, n = np.random.default_rng(0), sum(f[1] for f in filters)
    w = {"char_embed": rng.uniform(-1, 1, (261, dim)), "CNN_proj/W_proj": rng.normal(0, 0.3, (n, proj)),
         "CNN_proj/b_proj": np.zeros(proj)}  # fmt: skip
    for i, (width, k) in enumerate(filters):
        w[f"CNN/W_cnn_{i}"], w[f"CNN/b_cnn_{i}"] = rng.normal(0, 0.5, (1, width, dim, k)), np.zeros(k)
    for name, shape in (("W_carry", (n, n)), ("b_carry", n), ("W_transform", (n, n)), ("b_transform", n)):
        w[f"CNN_high_0/{name}"] = rng.normal(0, 0.4, shape)
    for direction in (0, 1):
        root = f"RNN_{direction}/RNN/MultiRNNCell/Cell0/LSTMCell/"
        w[root + "W_0"], w[root + "B"] = rng.normal(0, 0.5, (2 * proj, 4 * cell)), np.zeros(4 * cell)
        w[root + "W_P_0"] = rng.normal(0, 0.3, (cell, proj))
    d.mkdir()
    (d / "options.json").write_text(json.dumps(options))
    with h5py.File(d / "weights.hdf5", "w") as fout:
        for name, value in w.items():
            fout.create_dataset(name, data=np.asarray(value, dtype=np.float32))
    (d / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nThe\nriver\nflows\nnorth\n.\n")
    return f"elmo:{d / 'options.json'}:{d / 'weights.hdf5'}", d / "vocab.txt"


def test_elmo_import_is_marked_and_overwrite_refuses_a_users_folder(users_folder, tmp_path, capsys):
    src, vocab = elmo_release(tmp_path / "release")
    out = tmp_path / "elmo"
    code, _, err = run(capsys, "import", src, "--vocab", vocab, "--out", out)
    assert code == 0, err
    assert made_by_warmstart(out) == "import"
    refused_over(capsys, users_folder, "import", src, "--vocab", vocab)


def test_tokenizer_train_is_marked_and_overwrite_refuses_a_users_folder(
    users_folder, wiki_extracts, tmp_path, capsys
):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(wiki_extracts[:200]) + "\n", encoding="utf-8")
    train = ["tokenizer", "train", "--corpus", corpus, "--vocab-size", "200"]
    out = tmp_path / "tok"
    code, _, err = run(capsys, *train, "--out", out)
    assert code == 0, err
    assert made_by_warmstart(out) == "tokenizer" and (out / MARKER).is_file()
    code, _, err = run(capsys, *train, "--out", out, "--overwrite")  # its own: replaced
    assert code == 0, err
    refused_over(capsys, users_folder, *train)


def test_a_tokenizer_trained_into_a_run_does_not_claim_it(tmp_path, wiki_extracts):
    from warmstart.tokenization.train import train_tokenizer

    final = tmp_path / "final"
    shutil.copytree(OLD_RUN / "final", final)
    assert made_by_warmstart(final) == "model"
    train_tokenizer(wiki_extracts[:200], "wordpiece", 200, final, overwrite=True, show_progress=False)
    assert not (final / MARKER).exists() and made_by_warmstart(final) == "model"


def test_an_on_the_fly_import_clears_what_killed_imports_left(exported, tmp_path, monkeypatch):
    monkeypatch.setenv("WARMSTART_CACHE", str(tmp_path / "cache"))
    imported, host = tmp_path / "cache" / "imported", leftovers.host()
    exited = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead = int(exited.stdout)  # a process that has exited
    stale = imported / f".tmp-hf-0123456789ab-{dead}@{host}"  # an import of an older version, killed
    moved = imported / f".old-hf-ba9876543210-{dead}@{host}"  # a replacement killed between its renames
    remote = imported / f".tmp-hf-0123456789ab-{dead}@otherhost"
    for d in (stale, moved, remote):
        d.mkdir(parents=True)
    (moved / "config.json").write_text("{}")

    out = Path(warmstart_dir(exported))
    assert out.parent == imported and made_by_warmstart(out) == "import"
    assert not stale.exists() and remote.exists()
    assert (imported / "hf-ba9876543210" / "config.json").read_text() == "{}"  # put back
    assert not [p for p in imported.iterdir() if p.name.startswith(".") and p != remote]
