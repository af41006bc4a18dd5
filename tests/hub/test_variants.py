"""`warmstart import` / `warmstart export` for the encoder variants (configs of warmstart's one encoder):
RoBERTa (positions offset by pad + 1), ALBERT (factorized embeddings, shared or unshared blocks) and ELECTRA's
discriminator: outputs equal to transformers on real text in both directions."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import SHAPE, batch, hf_dir, load_unit, same, tiny_electra
from warmstart.checkpoints.load import load_encoder
from warmstart.hub.convert import export_hf, import_hf
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.parity
TOL = 1e-4


# --------------------------------------------------------------------------------------------- roberta
def tiny_roberta(tok):
    torch.manual_seed(0)
    config = transformers.RobertaConfig(
        vocab_size=tok.vocab_size, max_position_embeddings=66, type_vocab_size=1, pad_token_id=tok.pad_id,
        bos_token_id=tok.bos_id, eos_token_id=tok.eos_id, **SHAPE,
    )  # fmt: skip
    model = transformers.RobertaForMaskedLM(config).eval()
    with torch.no_grad():
        model.lm_head.bias.normal_()
        model.roberta.embeddings.position_embeddings.weight.mul_(20)  # positions that matter
    return model


def test_roberta_round_trips_with_equal_logits(bpe_shards, wiki_extracts, tmp_path):
    tok = Tokenizer.load(bpe_shards / "tokenizer")
    assert tok.pad_id == 1  # RoBERTa's layout: positions start at pad + 1 = 2
    hf = tiny_roberta(tok)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, bpe_shards / "tokenizer"), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    assert config["max_position_embeddings"] == 64 and config["type_vocab_size"] == 1
    assert config["warmstart"]["hf_model_type"] == "roberta"
    unit = load_unit(ws)
    table = hf.roberta.embeddings.position_embeddings.weight
    assert torch.equal(unit.encoder.embeddings.position.weight, table[2:])
    x, mask, _ = batch(tok, wiki_extracts[:3])
    with torch.no_grad():
        mine = unit.head(unit.encoder(x, mask))
        assert same(mine, hf(input_ids=x, attention_mask=mask).logits, mask) < TOL
        back = transformers.AutoModelForMaskedLM.from_pretrained(export_hf(ws, tmp_path / "out")).eval()
        assert type(back).__name__ == "RobertaForMaskedLM"
        assert torch.equal(back.roberta.embeddings.position_embeddings.weight[2:], table[2:])
        assert same(back(input_ids=x, attention_mask=mask).logits, mine, mask) < TOL
        # left padding: transformers skips the padding when numbering positions, warmstart does not
        left = torch.cat([x[2:, 17:], x[2:, :17]], 1)
        lmask = (left != tok.pad_id).long()
        gap = same(
            back(input_ids=left, attention_mask=lmask).logits, unit.head(unit.encoder(left, lmask)), lmask
        )
        assert gap > 1e-2


def test_a_native_roberta_run_exports_as_roberta(bpe_shards, wiki_extracts, tmp_path):
    """No import record: type_vocab_size 1 and a byte-level BPE tokenizer (the roberta presets) -> RoBERTa."""
    tok = Tokenizer.load(bpe_shards / "tokenizer")
    ws = import_hf(hf_dir(tmp_path / "hf", tiny_roberta(tok), bpe_shards / "tokenizer"), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    del config["warmstart"]["hf_model_type"], config["warmstart"]["imported_from"]
    (ws / "config.json").write_text(json.dumps(config))
    out = export_hf(ws, tmp_path / "out")
    assert json.loads((out / "config.json").read_text())["max_position_embeddings"] == 66
    unit = load_unit(ws)
    x, mask, _ = batch(tok, wiki_extracts[5:8])
    back = transformers.AutoModelForMaskedLM.from_pretrained(out).eval()
    with torch.no_grad():
        assert (
            same(back(input_ids=x, attention_mask=mask).logits, unit.head(unit.encoder(x, mask)), mask) < TOL
        )


# ---------------------------------------------------------------------------------------------- albert
def tiny_albert(tok, groups=1, embedding=16):
    torch.manual_seed(0)
    config = transformers.AlbertConfig(
        vocab_size=tok.vocab_size, embedding_size=embedding, max_position_embeddings=64,
        num_hidden_groups=groups, pad_token_id=tok.pad_id, hidden_act="gelu_new", **SHAPE,
    )  # fmt: skip
    model = transformers.AlbertForMaskedLM(config).eval()
    with torch.no_grad():
        model.predictions.bias.normal_()
    return model


@pytest.mark.parametrize("groups", [1, 3], ids=["shared", "unshared"])
def test_albert_round_trips_with_equal_logits(groups, small_tokenizer, wiki_extracts, tmp_path):
    tok = Tokenizer.load(small_tokenizer)
    hf = tiny_albert(tok, groups)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, small_tokenizer), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    assert config["share_layers"] == (groups == 1) and config["embedding_size"] == 16
    unit = load_unit(ws)
    assert len(unit.encoder.layers) == (1 if groups == 1 else 3)
    x, mask, t = batch(tok, wiki_extracts[:3], pairs=True)
    assert t.max() == 1
    with torch.no_grad():
        mine = unit.head(unit.encoder(x, mask, t))
        assert same(mine, hf(input_ids=x, attention_mask=mask, token_type_ids=t).logits, mask) < TOL
        out = export_hf(ws, tmp_path / "out")
        back = transformers.AutoModelForMaskedLM.from_pretrained(out).eval()
        assert type(back).__name__ == "AlbertForMaskedLM" and back.config.num_hidden_groups == groups
        assert same(back(input_ids=x, attention_mask=mask, token_type_ids=t).logits, mine, mask) < TOL


def test_albert_without_factorized_embeddings(small_tokenizer, wiki_extracts, tmp_path, capsys):
    """embedding_size == hidden_size: an identity projection imports (and is written back on export);
    any other projection is refused, as warmstart's encoder has none."""
    tok = Tokenizer.load(small_tokenizer)
    hf = tiny_albert(tok, embedding=32)
    src = hf_dir(tmp_path / "hf", hf, small_tokenizer)
    code, _, err = run(capsys, "import", src, "--out", tmp_path / "refused")
    assert_one_line_error(code, err, "embedding_size equals hidden_size", "projects its embeddings")
    with torch.no_grad():
        hf.albert.encoder.embedding_hidden_mapping_in.weight.copy_(torch.eye(32))
        hf.albert.encoder.embedding_hidden_mapping_in.bias.zero_()
    hf.save_pretrained(src)
    ws = import_hf(src, tmp_path / "ws")
    assert json.loads((ws / "config.json").read_text())["embedding_size"] is None
    unit = load_unit(ws)
    x, mask, _ = batch(tok, wiki_extracts[:3])
    back = transformers.AutoModelForMaskedLM.from_pretrained(export_hf(ws, tmp_path / "out")).eval()
    with torch.no_grad():
        mine = unit.head(unit.encoder(x, mask))
        assert same(mine, hf(input_ids=x, attention_mask=mask).logits, mask) < TOL
        assert same(back(input_ids=x, attention_mask=mask).logits, mine, mask) < TOL


# --------------------------------------------------------------------------------------------- electra
def test_electra_discriminator_round_trips_and_finetuning_loads_it(small_tokenizer, wiki_extracts, tmp_path):
    tok = Tokenizer.load(small_tokenizer)
    hf = tiny_electra(tok)
    with pytest.warns(UserWarning, match="generator: it starts fresh"):
        ws = import_hf(hf_dir(tmp_path / "hf", hf, small_tokenizer), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    assert config["warmstart"]["objective"] == "electra" and config["pooler"] is False
    unit = load_unit(ws)  # discriminator + discriminator head + a fresh generator
    x, mask, t = batch(tok, wiki_extracts[:3], pairs=True)
    with torch.no_grad():
        mine = unit.discriminator_head(unit.encoder(x, mask, t))
        theirs = hf(input_ids=x, attention_mask=mask, token_type_ids=t).logits
        assert same(mine, theirs, mask) < TOL
        encoder, _, _ = load_encoder(ws)  # what `warmstart finetune --init` starts from: the discriminator
        hidden = hf.electra(input_ids=x, attention_mask=mask, token_type_ids=t).last_hidden_state
        assert same(encoder.eval()(x, mask, t), hidden, mask) < TOL
        out = export_hf(ws, tmp_path / "out")
        back = transformers.AutoModelForPreTraining.from_pretrained(out).eval()
        assert type(back).__name__ == "ElectraForPreTraining"
        assert same(back(input_ids=x, attention_mask=mask, token_type_ids=t).logits, mine, mask) < TOL
    assert "generator.layers.0.attn.qkv.weight" not in load_file(str(out / "model.safetensors"))
    assert (out / "generator" / "config.json").is_file()  # its generator: see test_hub_pretraining_heads


# ------------------------------------------------------------------------------------------ bad input
def test_an_unsupported_model_type_lists_every_supported_one(capsys, tmp_path):
    src = tmp_path / "deberta"
    src.mkdir()
    (src / "config.json").write_text(json.dumps({"model_type": "deberta", "vocab_size": 50}))
    code, _, err = run(capsys, "import", src, "--out", tmp_path / "out")
    assert_one_line_error(code, err, "deberta", "bert, roberta, albert, electra, gpt2, t5, bart")


def test_albert_layer_groups_warmstart_cannot_share_are_refused(small_tokenizer, tmp_path, capsys):
    tok = Tokenizer.load(small_tokenizer)
    src = hf_dir(tmp_path / "hf", tiny_albert(tok, groups=1), small_tokenizer)
    config = json.loads((src / "config.json").read_text())
    state = load_file(str(src / "model.safetensors"))
    prefix = "albert.encoder.albert_layer_groups."
    state.update(
        {k.replace(f"{prefix}0.", f"{prefix}1."): v.clone() for k, v in state.items() if k.startswith(prefix)}
    )
    save_file(state, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({**config, "num_hidden_groups": 2}))
    code, _, err = run(capsys, "import", src, "--out", tmp_path / "out")
    assert_one_line_error(code, err, "num_hidden_groups=2 of 3 layers")


def test_a_roberta_without_pad_token_id_is_refused(bpe_shards, tmp_path, capsys):
    tok = Tokenizer.load(bpe_shards / "tokenizer")
    src = hf_dir(tmp_path / "hf", tiny_roberta(tok), bpe_shards / "tokenizer")
    config = json.loads((src / "config.json").read_text())
    (src / "config.json").write_text(json.dumps({**config, "pad_token_id": None}))
    code, _, err = run(capsys, "import", src, "--out", tmp_path / "out")
    assert_one_line_error(code, err, "pad_token_id")
