"""Features from chosen layers and pooling; `warmstart embed`; the layer-wise linear probe."""

import json

import numpy as np
import pytest
import torch

from warmstart.checkpoints.load import load_encoder
from warmstart.cli.main import main
from warmstart.commands.probe import accuracy, fit_probe
from warmstart.errors import WarmstartError
from warmstart.inference.encode import embed
from warmstart.nn.pooling import check_layer
from warmstart.tasks.base import encoder_inputs

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "layer", ["last", "second_to_last", "sum_last4", "concat_last4", "average", "0", "2", "-1"]
)
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_embed_selects_the_layer_and_pools(tiny_pretrained, wiki_extracts, layer, pooling):
    encoder, tok, _ = load_encoder(tiny_pretrained)
    encoder.eval()
    texts = [t[: 40 + 30 * i] for i, t in enumerate(wiki_extracts[:5])]
    if layer.endswith("last4"):
        with pytest.raises(WarmstartError, match="needs 4 layers"):
            embed(encoder, tok, texts, layer, pooling, 64)
        return
    got = embed(encoder, tok, texts, layer, pooling, 64)
    for i, text in enumerate(texts):  # one at a time: no padding at all
        ids, types = tok.encode_pairs([text], None, 64)
        b = encoder_inputs(ids, types, tok.pad_id)
        with torch.no_grad():
            states = encoder.hidden_states(b["input_ids"], b["attention_mask"], b["token_type_ids"])
        index = {"last": -1, "second_to_last": -2}.get(layer, None)
        if layer == "average":  # the embeddings' and each layer's states, weighted alike
            h = torch.stack(states).mean(0)[0]
        else:
            h = states[index if index is not None else int(layer)][0]
        want = h[0] if pooling == "cls" else h.mean(0)
        assert np.allclose(got[i], want.numpy(), atol=1e-5)
    assert np.allclose(states[-1], encoder(b["input_ids"], b["attention_mask"]).detach(), atol=1e-6)


def test_layer_spec_errors(tiny_pretrained):
    with pytest.raises(WarmstartError, match="layer 3 does not exist"):
        check_layer("3", 2)
    with pytest.raises(WarmstartError, match="unknown layer 'top'"):
        check_layer("top", 2)


def test_embed_cli_writes_npy(tiny_pretrained, rt_small, tmp_path, capsys):
    out = tmp_path / "x.npy"
    assert (
        main(
            [
                "embed",
                str(tiny_pretrained),
                "--data",
                str(rt_small),
                "--split",
                "test",
                "--pooling",
                "mean",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    x = np.load(out)
    assert x.shape[1] == 32 and x.shape[0] > 10 and np.isfinite(x).all()
    assert f"{x.shape[0]:,} x 32 features" in capsys.readouterr().out


def test_fit_probe_separates_separable_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 5, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    probe = fit_probe(x, y, 2, 1e-4)
    assert accuracy(probe, x, y) > 0.97


def test_probe_cli_scores_every_layer_and_plots(tiny_pretrained, rt_small, tmp_path, capsys):
    out = tmp_path / "probe"
    assert main(["probe", str(tiny_pretrained), "--data", str(rt_small), "--out", str(out)]) == 0
    result = json.loads((out / "probe.json").read_text())
    assert set(result["layers"]) == {"pretrained", "scratch"}
    for rows in result["layers"].values():
        assert [r["layer"] for r in rows] == [0, 1, 2]
        assert all(0 <= r["test"] <= 1 for r in rows)
    assert (out / "probe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| layer | pretrained test | scratch test |" in capsys.readouterr().out
