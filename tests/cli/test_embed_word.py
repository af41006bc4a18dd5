"""`warmstart embed --word`: one word's contextual vectors in real wiki-leads sentences, by sense, with the
picture; the vectors equal the encoder's own states at the word's sub-words."""

import json

import numpy as np
import pytest
import torch

from warmstart.checkpoints.load import load_encoder
from warmstart.cli.main import main
from warmstart.commands.word_senses import find_occurrences, parse_senses, sense_separation
from warmstart.errors import WarmstartError

SENSES = ["industry=power,nuclear,factory", "botany=species,flowering,genus"]


@pytest.fixture(scope="module")
def embedded(tiny_pretrained, tmp_path_factory):
    out = tmp_path_factory.mktemp("word") / "plant.npy"
    argv = ["embed", str(tiny_pretrained), "--data", "wiki-leads", "--word", "plant", "--limit", "12"]
    for s in SENSES:
        argv += ["--sense", s]
    assert main([*argv, "--out", str(out), "--plot"]) == 0
    return out


def test_vectors_sentences_and_plot(embedded, tiny_pretrained):
    vectors = np.load(embedded)
    info = json.loads(embedded.with_suffix(".json").read_text())
    assert vectors.shape == (12, 32) and info["count"] == 12
    assert info["senses"] == {"industry": 6, "botany": 6}
    assert 0 <= info["separation"]["accuracy"] <= 1 and info["separation"]["chance"] == 0.5
    assert embedded.with_suffix(".png").stat().st_size > 10_000
    encoder, tok, _ = load_encoder(tiny_pretrained)
    encoder.eval()
    checked = 0
    for row, occ in zip(vectors, info["occurrences"]):
        s = occ["sentence"]
        assert s[occ["start"] : occ["end"]].lower() == "plant"
        enc = tok.backend.encode(s)
        if len(enc.ids) > 128:
            continue  # a window of the sentence around the word was encoded: see the long-sentence test
        checked += 1
        where = [i for i, (a, b) in enumerate(enc.offsets) if b > a and a < occ["end"] and b > occ["start"]]
        with torch.no_grad():
            states = encoder.hidden_states(torch.tensor([enc.ids]), torch.ones(1, len(enc.ids)))
        assert np.allclose(row, states[-1][0, where].mean(0).numpy(), atol=1e-5)
    assert checked >= 6


def test_a_word_deep_in_a_long_sentence_gets_a_window(tiny_pretrained):
    from warmstart.commands.word_senses import Occurrence, contextual_vectors

    encoder, tok, _ = load_encoder(tiny_pretrained)
    sentence = "The old mill by the river " * 40 + "became a power plant in 1950."
    start = sentence.index("plant")
    (row,) = contextual_vectors(encoder, tok, [Occurrence(sentence, start, start + 5)])
    # by hand: the last 126 sub-words (the word ends the sentence but for " in 1950."), [CLS] ... [SEP]
    enc = tok.backend.encode(sentence, add_special_tokens=False)
    ids = [tok.cls_id, *enc.ids[-126:], tok.sep_id]
    offsets = enc.offsets[-126:]
    where = [i + 1 for i, (a, b) in enumerate(offsets) if a < start + 5 and b > start]
    encoder.eval()
    with torch.no_grad():
        states = encoder.hidden_states(torch.tensor([ids]), torch.ones(1, len(ids)))
    assert len(enc.ids) > 128 and np.allclose(row, states[-1][0, where].mean(0).numpy(), atol=1e-5)


def test_senses_are_balanced_and_cues_decide():
    texts = [
        "The nuclear plant closed. A flowering plant grows here.",
        "This plant is a species of the genus Rosa and the power company likes it.",
        "The plant makes cars in a factory.",
    ]
    found = find_occurrences(texts, "plant", parse_senses(SENSES), limit=4)
    assert [(o.sense, o.sentence) for o in found] == [
        ("industry", "The nuclear plant closed."),
        ("botany", "A flowering plant grows here."),
        ("industry", "The plant makes cars in a factory."),
    ]  # the second text has cues of both senses: skipped
    sep = sense_separation(np.array([[1.0, 0], [0.9, 0.1], [0, 1.0], [0.1, 0.9]]), ["a", "a", "b", "b"])
    assert sep == {"accuracy": 1.0, "chance": 0.5, "count": 4}


def test_bad_word_input_is_one_line(tiny_pretrained, tmp_path, capsys):
    with pytest.raises(WarmstartError, match="NAME=CUE"):
        parse_senses(["nocues"])
    base = ["embed", str(tiny_pretrained), "--data", "wiki-leads", "--out", str(tmp_path / "x.npy")]
    assert main([*base, "--word", "zzqxj"]) == 2
    assert "too few sentences with 'zzqxj'" in capsys.readouterr().err
    assert main([*base, "--plot"]) == 2
    assert "go with --word" in capsys.readouterr().err
    assert not (tmp_path / "x.npy").exists()
