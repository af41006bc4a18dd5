"""`warmstart fill-mask`: top-k tokens per [MASK], equal to a softmax over the MLM head's logits as computed
by transformers' BertForMaskedLM on the same (exported) weights."""

import json

import pytest
import torch

from warmstart.cli.main import main
from warmstart.errors import WarmstartError
from warmstart.inference.fill_mask import FillMask

TEXT = "The city is the [MASK] of the region and lies on the [MASK] river."


@pytest.fixture(scope="module")
def reference(tiny_pretrained, tmp_path_factory):
    """transformers' softmax at the two masks, from the run exported with `warmstart export`."""
    transformers = pytest.importorskip("transformers")
    from warmstart.hub.convert import export_hf

    out = export_hf(tiny_pretrained, tmp_path_factory.mktemp("fill") / "hf")
    model = transformers.BertForMaskedLM.from_pretrained(out).eval()
    tok = transformers.PreTrainedTokenizerFast.from_pretrained(out)
    enc = tok(TEXT, return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).logits[0]
    where = (enc["input_ids"][0] == tok.mask_token_id).nonzero().flatten()
    return tok, logits[where].softmax(-1)


def test_top_k_is_the_softmax_of_the_mlm_head(tiny_pretrained, reference):
    tok, probs = reference
    result = FillMask(str(tiny_pretrained)).fill(TEXT, top_k=6)
    assert len(result["masks"]) == 2
    for row, mask in zip(probs, result["masks"]):
        scores, ids = row.topk(6)
        assert [m["token"] for m in mask] == tok.convert_ids_to_tokens(ids.tolist())
        assert [m["score"] for m in mask] == pytest.approx(scores.tolist(), abs=2e-5)


def test_cli_json_and_text_output(tiny_pretrained, tmp_path, capsys):
    texts = tmp_path / "probes.txt"
    texts.write_text("[MASK] is a city.\n\nIt was [MASK] in 1990.\n")
    assert (
        main(["fill-mask", str(tiny_pretrained), TEXT, "--input", str(texts), "--json", "--top-k", "3"]) == 0
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in rows] == [TEXT, "[MASK] is a city.", "It was [MASK] in 1990."]
    assert [len(r["masks"]) for r in rows] == [2, 1, 1] and all(len(m) == 3 for r in rows for m in r["masks"])
    assert all(1 >= m[0]["score"] >= m[1]["score"] >= m[2]["score"] > 0 for r in rows for m in r["masks"])
    assert main(["fill-mask", str(tiny_pretrained), "A [MASK] day."]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0] == "A [MASK] day." and out[1].startswith("  [MASK] 1: ") and len(out[1].split()) == 2 + 2 * 5
    )


def test_random_twin_differs_and_bad_input_is_one_line(tiny_pretrained, capsys):
    trained = FillMask(str(tiny_pretrained)).fill(TEXT, 3)
    twin = FillMask(str(tiny_pretrained), random_init=True).fill(TEXT, 3)
    assert twin != trained and twin == FillMask(str(tiny_pretrained), random_init=True).fill(TEXT, 3)
    assert main(["fill-mask", str(tiny_pretrained), "no mask here"]) == 2
    assert "has no [MASK]" in capsys.readouterr().err
    assert main(["fill-mask", str(tiny_pretrained)]) == 2
    assert "no text given" in capsys.readouterr().err


def test_a_mask_past_the_models_length_is_refused(tiny_pretrained, capsys):
    model = FillMask(str(tiny_pretrained))
    long = "[MASK] is a city. " + "It lies on a river. " * 30 + "Its mayor is [MASK]."
    said = rf"2 x \[MASK\] but only 1 within the model's {model.max_length} tokens"
    with pytest.raises(WarmstartError, match=said):
        model.fill(long)  # before: one mask answered, the second dropped without a word
    assert len(model.fill(long[:60] + "[MASK].")["masks"]) == 2  # both within: both answered
    assert main(["fill-mask", str(tiny_pretrained), long]) == 2
    err = capsys.readouterr().err.strip()
    assert "mask 2 on is cut off" in err and "\n" not in err
