"""`warmstart embed --text-pair-column`: each row's two texts encoded as the model's pair input (segment B,
as finetuning on pairs reads them), one vector per row (issue 40: embed had no pair column)."""

import csv

import numpy as np
import pytest
import torch

from tests.helpers.cli import assert_one_line_error
from warmstart.checkpoints.load import load_encoder
from warmstart.cli.main import main

pytestmark = pytest.mark.integration


def test_embed_encodes_each_pair_as_one_input(tiny_pretrained, wiki_extracts, tmp_path, capsys):
    rows = [(t[:120], p[:120]) for t, p in zip(wiki_extracts[:6], wiki_extracts[6:12])]
    data = tmp_path / "pairs.csv"
    with open(data, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([("text", "text_pair"), *rows])
    argv = ["embed", str(tiny_pretrained), "--data", str(data), "--pooling", "cls", "--max-length", "64"]
    assert main([*argv, "--text-pair-column", "text_pair", "--out", str(tmp_path / "p.npy")]) == 0
    assert main([*argv, "--out", str(tmp_path / "t.npy")]) == 0
    paired, alone = np.load(tmp_path / "p.npy"), np.load(tmp_path / "t.npy")
    encoder, tok, _ = load_encoder(tiny_pretrained)
    (ids,), (types,) = tok.encode_pairs([rows[0][0]], [rows[0][1]], 64)
    assert 1 in types  # the second text is segment B
    with torch.no_grad():
        cls = encoder.eval()(torch.tensor([ids]), None, torch.tensor([types]))[0, 0].numpy()
    assert np.abs(paired[0] - cls).max() < 1e-5 and np.abs(paired - alone).max() > 1e-3
    capsys.readouterr()
    code = main([*argv, "--text-pair-column", "nope", "--out", str(tmp_path / "n.npy")])
    assert_one_line_error(code, capsys.readouterr().err, "has no column 'nope'")
