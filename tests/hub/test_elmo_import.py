"""`warmstart import elmo:OPTIONS.json:WEIGHTS.hdf5 --vocab VOCAB.txt`: a release written in bilm-tf's exact
HDF5 layout gives the token layer and LSTM states of an independent reference written in the release's own
conventions (TF's gate order i, j, f, o and forget bias, [input; hidden] kernel rows, bilm-tf's highway, the
padding row before char_embed, clipping), and bad input is one clear line naming the file and field."""

import json

import numpy as np
import pytest
import torch

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import load_unit
from warmstart.checkpoints.load import load_encoder
from warmstart.hub.elmo_release import read_options, read_weights

pytestmark = pytest.mark.integration

h5py = pytest.importorskip("h5py")

FILTERS = [[1, 4], [3, 8]]
D, P, C, F, MAX_CHARS = 4, 8, 16, 12, 50
OPTIONS = {
    "lstm": {"use_skip_connections": True, "projection_dim": P, "cell_clip": 1.0, "proj_clip": 0.5, "dim": C,
             "n_layers": 2},
    "char_cnn": {"activation": "relu", "filters": FILTERS, "n_highway": 1, "embedding": {"dim": D},
                 "n_characters": 262, "max_characters_per_token": MAX_CHARS},
}  # fmt: skip
SENTENCES = ["The river flows north through the old city .", "Paris is the capital of France ."]
VOCAB = ["<S>", "</S>", "<UNK>", *dict.fromkeys(" ".join(SENTENCES).split()), "mountain"]
LONG = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch"  # a real name, 58 bytes


def release_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """Random weights under bilm-tf's dataset names and shapes (dump_weights; softmax left out)."""
    rng = np.random.default_rng(seed)
    w = {"char_embed": rng.uniform(-1, 1, (261, D))}
    for i, (width, n) in enumerate(FILTERS):
        w[f"CNN/W_cnn_{i}"] = rng.normal(0, 0.5, (1, width, D, n))
        w[f"CNN/b_cnn_{i}"] = rng.normal(0, 0.1, n)
    for name, shape in (("W_carry", (F, F)), ("b_carry", F), ("W_transform", (F, F)), ("b_transform", F)):
        w[f"CNN_high_0/{name}"] = rng.normal(0, 0.4, shape)
    w["CNN_proj/W_proj"], w["CNN_proj/b_proj"] = rng.normal(0, 0.3, (F, P)), rng.normal(0, 0.1, P)
    for direction in (0, 1):
        for layer in (0, 1):
            root = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            w[root + "W_0"] = rng.normal(0, 0.5, (2 * P, 4 * C))
            w[root + "B"] = rng.normal(0, 0.3, 4 * C)
            w[root + "W_P_0"] = rng.normal(0, 0.3, (C, P))
    return {k: v.astype(np.float32) for k, v in w.items()}


def write_release(d, weights: dict, options: dict = OPTIONS, vocab=VOCAB):
    d.mkdir(exist_ok=True)
    (d / "options.json").write_text(json.dumps(options))
    with h5py.File(d / "weights.hdf5", "w") as fout:
        for name, value in weights.items():
            fout.create_dataset(name, data=value)
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return f"elmo:{d / 'options.json'}:{d / 'weights.hdf5'}", d / "vocab.txt"


# ---------------------------------------------------------------- the reference, in the release's conventions
def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def release_chars(word: str | None, mark: int | None = None) -> np.ndarray:
    """bilm-tf's UnicodeCharsVocabulary: [bow, bytes or the sentence mark, eow, pad...], +1 by its Batcher."""
    ids = np.full(MAX_CHARS, 260)
    inner = [mark] if mark is not None else list(word.encode("utf-8"))[: MAX_CHARS - 2]
    ids[0], ids[1 : 1 + len(inner)], ids[1 + len(inner)] = 258, inner, 259
    return ids + 1


def reference_tokens(w: dict, words: list[str]) -> np.ndarray:
    """bilm-tf's _build_word_char_embeddings for <S> words </S>: (T, P)."""
    ids = np.stack([release_chars(None, 256), *(release_chars(x) for x in words), release_chars(None, 257)])
    table = np.concatenate([np.zeros((1, D)), w["char_embed"]]).astype(np.float64)  # its padding row
    emb = table[ids]  # (T, MAX_CHARS, D)
    pooled = []
    for i, (width, _) in enumerate(FILTERS):
        windows = np.stack([emb[:, s : s + width] for s in range(MAX_CHARS - width + 1)], 1)
        conv = np.einsum("tswd,wdn->tsn", windows, w[f"CNN/W_cnn_{i}"][0]) + w[f"CNN/b_cnn_{i}"]
        pooled.append(np.maximum(conv.max(1), 0))  # max-pool over the word, then relu
    x = np.concatenate(pooled, -1)
    h = {k.split("/")[1]: v for k, v in w.items() if k.startswith("CNN_high_0/")}
    carry = sigmoid(x @ h["W_carry"] + h["b_carry"])
    x = carry * np.maximum(x @ h["W_transform"] + h["b_transform"], 0) + (1 - carry) * x
    return x @ w["CNN_proj/W_proj"] + w["CNN_proj/b_proj"]


def reference_lstm(x, kernel, bias, proj, clips: list):
    """TF's LSTMCell(num_proj, cell_clip, proj_clip) over one sequence: [x; h] @ W_0 + B, gates i, j, f, o,
    forget_bias 1.0."""
    cell_clip, proj_clip = OPTIONS["lstm"]["cell_clip"], OPTIONS["lstm"]["proj_clip"]
    h, c, outs = np.zeros(proj.shape[1]), np.zeros(proj.shape[0]), []
    for t in range(len(x)):
        i, j, f, o = np.split(np.concatenate([x[t], h]) @ kernel + bias, 4)
        c = sigmoid(f + 1.0) * c + sigmoid(i) * np.tanh(j)
        clips.append(("cell", bool((np.abs(c) > cell_clip).any())))
        c = np.clip(c, -cell_clip, cell_clip)
        h = (sigmoid(o) * np.tanh(c)) @ proj
        clips.append(("proj", bool((np.abs(h) > proj_clip).any())))
        h = np.clip(h, -proj_clip, proj_clip)
        outs.append(h)
    return np.stack(outs)


def reference_bilm(w: dict, tokens: np.ndarray, clips: list) -> list[np.ndarray]:
    """[forward_l; backward_l] per layer: RNN_1 reads the sentence reversed; layer 2 adds its input."""
    out = {0: [], 1: []}
    for direction in (0, 1):
        x = tokens if direction == 0 else tokens[::-1]
        for layer in (0, 1):
            root = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            y = reference_lstm(x, w[root + "W_0"], w[root + "B"], w[root + "W_P_0"], clips)
            y = y + x if layer > 0 else y  # use_skip_connections: ResidualWrapper from the second layer
            out[direction].append(y if direction == 0 else y[::-1])
            x = y
    return [np.concatenate(pair, -1) for pair in zip(out[0], out[1])]


# ---------------------------------------------------------------- the tests
def test_the_imported_model_computes_what_the_release_does(tmp_path, capsys):
    w = release_weights()
    src, vocab = write_release(tmp_path / "release", w)
    code, out, err = run(capsys, "import", src, "--out", tmp_path / "out", "--vocab", vocab)
    assert code == 0, err
    assert "warning:" in err and "no softmax" in err and "starts fresh" in err
    model, tok, config = load_encoder(tmp_path / "out")
    assert config["warmstart"]["imported_from"] == src and config["model_type"] == "elmo"
    assert load_unit(tmp_path / "out").model.config.cell_clip == 1.0  # every tensor under the unit's names
    assert tok.vocab_size == 5 + len(VOCAB) - 3  # warmstart's five specials; <S> </S> <UNK> are theirs
    assert tok.encode("mountain zebra") == [tok.token_to_id("mountain"), tok.unk_id]
    ids, _ = tok.encode_pairs(SENTENCES, None, 64)
    n = max(map(len, ids))
    batch = torch.tensor([x + [tok.pad_id] * (n - len(x)) for x in ids])
    mask = (batch != tok.pad_id).long()
    with torch.no_grad():
        layers = model.eval().hidden_states(batch, mask)
    clips = []
    for row, text in enumerate(SENTENCES):
        words = text.split()
        assert [tok.id_to_token(i) for i in ids[row]] == ["<S>", *words, "</S>"]
        tokens = reference_tokens(w, words)
        expected = [np.concatenate([tokens, tokens], -1), *reference_bilm(w, tokens, clips)]
        for got, want in zip(layers, expected, strict=True):
            got = got[row, : len(ids[row])].double().numpy()
            assert np.abs(got - want).max() < 1e-5, np.abs(got - want).max()
    assert ("cell", True) in clips and ("proj", True) in clips  # both clips were reached and compared


def without(weights: dict, name: str) -> dict:
    return {k: v for k, v in weights.items() if k != name}


def broken_options(**lstm) -> dict:
    return {**OPTIONS, "lstm": {k: v for k, v in {**OPTIONS["lstm"], **lstm}.items() if v is not None}}


@pytest.mark.parametrize(
    "case",
    ["not json", "missing field", "tanh", "missing dataset", "wrong shape", "long word", "no vocab"],
)
def test_bad_releases_are_one_clear_line(tmp_path, capsys, case):
    w, options, vocab = release_weights(), OPTIONS, VOCAB
    if case == "missing field":
        options = broken_options(dim=None)
    if case == "tanh":
        options = {**OPTIONS, "char_cnn": {**OPTIONS["char_cnn"], "activation": "tanh"}}
    if case == "missing dataset":
        w = without(w, "CNN_high_0/W_carry")
    if case == "wrong shape":
        w["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0"] = np.zeros((C, P + 1), np.float32)
    if case == "long word":
        vocab = [*VOCAB[:5], LONG, *VOCAB[5:]]
    src, vocab_file = write_release(tmp_path / "release", w, options, vocab)
    opts, weights = tmp_path / "release" / "options.json", tmp_path / "release" / "weights.hdf5"
    if case == "not json":
        opts.write_text('{"lstm": {"dim": 16,')
    args = [] if case == "no vocab" else ["--vocab", vocab_file]
    code, _, err = run(capsys, "import", src, "--out", tmp_path / "out", *args)
    needles = {
        "not json": [str(opts), "not valid JSON"],
        "missing field": [str(opts), "lstm.dim"],
        "tanh": [str(opts), "char_cnn.activation", "tanh"],
        "missing dataset": [str(weights), "CNN_high_0/W_carry"],
        "wrong shape": [str(weights), "Cell1/LSTMCell/W_P_0", "(16, 9)", "(16, 8)"],
        "long word": [str(vocab_file), "line 6", LONG[:20], "max_characters_per_token=50"],
        "no vocab": ["no vocabulary", "--vocab"],
    }[case]
    assert_one_line_error(code, err, *needles)
    assert not (tmp_path / "out").exists()


def test_the_source_form_and_flags_are_checked(tmp_path, capsys):
    src, vocab = write_release(tmp_path / "release", release_weights())
    code, _, err = run(capsys, "import", "elmo:nothing-here", "--out", tmp_path / "out", "--vocab", vocab)
    assert_one_line_error(code, err, "elmo:OPTIONS.json:WEIGHTS.hdf5")
    code, _, err = run(capsys, "import", src, "--out", tmp_path / "release", "--vocab", vocab, "--overwrite")
    assert_one_line_error(code, err, "contains the SRC", "which this command reads")
    code, _, err = run(capsys, "import", tmp_path, "--out", tmp_path / "out", "--vocab", vocab)
    assert_one_line_error(code, err, "--vocab goes with an ELMo release")


def test_filters_as_wide_as_the_projection_need_no_cnn_proj(tmp_path):
    """bilm-tf projects the CNN's output only when the filters sum to more than projection_dim."""
    options = {**OPTIONS, "char_cnn": {**OPTIONS["char_cnn"], "filters": [[1, 4], [3, 4]], "n_highway": None}}
    w = {k: v for k, v in release_weights().items() if not k.startswith(("CNN_proj", "CNN_high", "CNN/"))}
    w.update({"CNN/W_cnn_0": np.ones((1, 1, D, 4), np.float32), "CNN/b_cnn_0": np.zeros(4, np.float32)})
    w.update({"CNN/W_cnn_1": np.ones((1, 3, D, 4), np.float32), "CNN/b_cnn_1": np.zeros(4, np.float32)})
    write_release(tmp_path, w, options)
    cfg = read_options(tmp_path / "options.json")
    assert cfg.n_highway == 0 and cfg.filters == [[1, 4], [3, 4]]
    state = read_weights(tmp_path / "weights.hdf5", cfg)
    assert torch.equal(state["chars.proj.weight"], torch.eye(P)) and not state["chars.proj.bias"].any()
    assert state["chars.convs.1.weight"].shape == (4, D, 3)
