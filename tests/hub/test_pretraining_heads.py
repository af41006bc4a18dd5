"""Pretraining heads beyond the masked LM through `warmstart import` / `warmstart export`, equal to
transformers on real text in both directions: ELECTRA's generator (an ElectraForMaskedLM in OUT/generator/,
or alone as a masked-LM run), BERT's next-sentence head (BertForPreTraining) and ALBERT's sentence-order head
(AlbertForPreTraining)."""

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import SHAPE, batch, hf_dir, load_unit, same, tiny_electra
from tests.helpers.shapes import TINY_MODEL
from warmstart.commands.pretrain import pretrain
from warmstart.hub.convert import export_hf, import_hf
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
pytestmark = [pytest.mark.integration, pytest.mark.parity]
TOL = 1e-4
GAPS = {}  # the largest difference each test saw, printed with -s


def gap(name: str, value: float) -> float:
    GAPS[name] = max(GAPS.get(name, 0.0), value)
    print(f"max abs diff {name}: {value:.2e}")
    return value


def tiny_generator(tok, disc=None, fraction=0.5):
    """An ElectraForMaskedLM a ``fraction`` of SHAPE wide (warmstart's electra.generator_size); with ``disc``,
    the discriminator's embeddings copied in (ELECTRA trains them shared)."""
    torch.manual_seed(1)
    heads = max(1, round(SHAPE["num_attention_heads"] * fraction))
    config = transformers.ElectraConfig(
        vocab_size=tok.vocab_size, embedding_size=16, max_position_embeddings=64, pad_token_id=tok.pad_id,
        num_hidden_layers=SHAPE["num_hidden_layers"], num_attention_heads=heads,
        hidden_size=round(SHAPE["hidden_size"] * fraction) // heads * heads,
        intermediate_size=round(SHAPE["intermediate_size"] * fraction),
    )  # fmt: skip
    model = transformers.ElectraForMaskedLM(config).eval()
    with torch.no_grad():
        model.generator_lm_head.bias.normal_()
        if disc is not None:
            model.electra.embeddings.load_state_dict(disc.electra.embeddings.state_dict())
    return model


def pretrain_tiny(shards, out, objective, *extra):
    flags = {"out": str(out), "objective": objective, "data": {"shards": str(shards)}, "train": {"steps": 2}}
    overrides = ["train.batch_size=4", "train.eval_batches=1", "train.progress=false", "train.save_every=0"]
    pretrain(None, None, flags, TINY_MODEL + overrides + ["train.eval_every=0", *extra])
    return out / "final"


def continue_from(init, shards, out, **flags) -> dict:
    """`warmstart pretrain --init` for one step; its init.json (what loaded, what started fresh)."""
    flags.update(out=str(out), init=str(init), data={"shards": str(shards)})
    overrides = ["train.steps=1", "data.seq_len=32", "train.batch_size=4", "train.eval_every=0"]
    pretrain(None, None, flags, overrides + ["train.progress=false", "train.save_every=0"])
    return json.loads((out / "init.json").read_text())


def generator_logits(unit, x, mask, t):
    return unit.generator_head(unit.generator(x, mask, t))


# -------------------------------------------------------------------------------------- ELECTRA generator
def test_an_electra_generator_alone_is_a_masked_lm_run(
    small_tokenizer, small_shards, wiki_extracts, tmp_path
):
    tok = Tokenizer.load(small_tokenizer)
    hf = tiny_generator(tok, fraction=0.25)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, small_tokenizer), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    assert config["warmstart"]["objective"] == "mlm" and config["warmstart"]["hf_model_type"] == "electra"
    assert (config["hidden_size"], config["embedding_size"], config["pooler"]) == (8, 16, False)
    unit = load_unit(ws)
    x, mask, t = batch(tok, wiki_extracts[:3], pairs=True)
    with torch.no_grad():
        mine = unit.head(unit.encoder(x, mask, t))
        theirs = hf(input_ids=x, attention_mask=mask, token_type_ids=t).logits
        assert gap("generator import", same(mine, theirs, mask)) < TOL
        back = transformers.AutoModelForMaskedLM.from_pretrained(export_hf(ws, tmp_path / "out")).eval()
        assert type(back).__name__ == "ElectraForMaskedLM"
        theirs = back(input_ids=x, attention_mask=mask, token_type_ids=t).logits
        assert gap("generator export", same(theirs, mine, mask)) < TOL
    # fill-mask and continued pretraining by mlm take it as any masked-LM model
    info = continue_from(ws, small_shards, tmp_path / "run")
    assert info["fresh"] == [] and info["loaded_tensors"] == len(load_file(str(ws / "model.safetensors")))


@pytest.mark.parametrize("layout", ["subdirectory", "--generator"])
def test_an_electra_pair_is_the_whole_electra_run(layout, small_tokenizer, wiki_extracts, tmp_path, capsys):
    tok = Tokenizer.load(small_tokenizer)
    disc = tiny_electra(tok)
    gen = tiny_generator(tok, disc, fraction=0.5)
    src = hf_dir(tmp_path / "disc", disc, small_tokenizer)
    gdir = hf_dir((src if layout == "subdirectory" else tmp_path) / "generator", gen, small_tokenizer)
    argv = ["import", src, "--out", tmp_path / "ws"] + (
        ["--generator", gdir] if layout == "--generator" else []
    )
    assert run(capsys, *argv)[0] == 0
    ws = tmp_path / "ws"
    config = json.loads((ws / "config.json").read_text())
    assert config["warmstart"]["objective"] == "electra"
    assert config["warmstart"]["electra"]["generator_size"] == 0.5
    unit = load_unit(ws)  # strict: discriminator, its head, the generator and its head
    x, mask, t = batch(tok, wiki_extracts[3:6], pairs=True)
    kw = dict(input_ids=x, attention_mask=mask, token_type_ids=t)
    with torch.no_grad():
        mine_d = unit.discriminator_head(unit.encoder(x, mask, t))
        mine_g = generator_logits(unit, x, mask, t)
        assert gap("pair import: discriminator", same(mine_d, disc(**kw).logits, mask)) < TOL
        assert gap("pair import: generator", same(mine_g, gen(**kw).logits, mask)) < TOL
        out = export_hf(ws, tmp_path / "out")
        back_d = transformers.AutoModelForPreTraining.from_pretrained(out).eval()
        back_g = transformers.AutoModelForMaskedLM.from_pretrained(out / "generator").eval()
        assert type(back_g).__name__ == "ElectraForMaskedLM" and back_g.config.hidden_size == 16
        assert gap("pair export: discriminator", same(back_d(**kw).logits, mine_d, mask)) < TOL
        assert gap("pair export: generator", same(back_g(**kw).logits, mine_g, mask)) < TOL


def test_a_warmstart_electra_run_exports_its_generator_and_imports_back(
    small_shards, wiki_extracts, tmp_path, recwarn
):
    final = pretrain_tiny(small_shards, tmp_path / "run", "electra", "model.embedding_size=16",
                          "model.pooler=false", "electra.generator_size=0.5")  # fmt: skip
    assert json.loads((final / "config.json").read_text())["warmstart"]["electra"]["generator_size"] == 0.5
    unit = load_unit(final)
    tok = Tokenizer.load(final)
    out = export_hf(tmp_path / "run", tmp_path / "hf")
    assert not [w for w in recwarn if "not exported" in str(w.message)]
    x, mask, t = batch(tok, wiki_extracts[6:9], pairs=True)
    kw = dict(input_ids=x, attention_mask=mask, token_type_ids=t)
    disc = transformers.AutoModelForPreTraining.from_pretrained(out).eval()
    gen = transformers.AutoModelForMaskedLM.from_pretrained(out / "generator").eval()
    assert (gen.config.hidden_size, gen.config.num_attention_heads, gen.config.embedding_size) == (16, 1, 16)
    with torch.no_grad():
        mine_d = unit.discriminator_head(unit.encoder(x, mask, t))
        assert gap("run export: discriminator", same(disc(**kw).logits, mine_d, mask)) < TOL
        assert (
            gap("run export: generator", same(gen(**kw).logits, generator_logits(unit, x, mask, t), mask))
            < TOL
        )
    back = import_hf(out, tmp_path / "ws")  # out/generator comes along: the same electra run
    theirs = load_file(str(back / "model.safetensors"))
    ours = load_file(str(final / "model.safetensors"))
    assert theirs.keys() == ours.keys() and all(torch.equal(theirs[k], ours[k]) for k in ours)
    # continuing from it keeps the recorded generator shape, so the generator's weights load too
    assert continue_from(back, small_shards, tmp_path / "more", objective="electra")["fresh"] == []


def test_a_generator_that_does_not_fit_its_discriminator_is_one_clear_line(small_tokenizer, tmp_path, capsys):
    tok = Tokenizer.load(small_tokenizer)
    disc = tiny_electra(tok)
    src = hf_dir(tmp_path / "disc", disc, small_tokenizer)
    own = hf_dir(tmp_path / "own", tiny_generator(tok, fraction=0.5), small_tokenizer)  # its own embeddings
    code, _, err = run(capsys, "import", src, "--generator", own, "--out", tmp_path / "a")
    assert_one_line_error(code, err, "embeddings", "differ from the discriminator's")
    odd = tiny_generator(tok, disc, fraction=0.5)
    odd.config.num_attention_heads = 4  # 4 heads of 4: no generator_size gives that with hidden 16
    code, _, err = run(capsys, "import", src, "--generator", hf_dir(tmp_path / "odd", odd, small_tokenizer),
                       "--out", tmp_path / "b")  # fmt: skip
    assert_one_line_error(code, err, "4 heads", "electra.generator_size")
    code, _, err = run(capsys, "import", own, "--generator", own, "--out", tmp_path / "c")
    assert_one_line_error(code, err, "--generator goes with an ElectraForPreTraining", "ElectraForMaskedLM")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# ----------------------------------------------------------------------------------------- NSP and SOP
def tiny_for_pretraining(family: str, tok):
    torch.manual_seed(0)
    kw = dict(vocab_size=tok.vocab_size, max_position_embeddings=64, pad_token_id=tok.pad_id, **SHAPE)
    if family == "albert":
        kw.update(embedding_size=16, hidden_act="gelu_new")
    cls = {"bert": "Bert", "albert": "Albert"}[family]
    model = getattr(transformers, f"{cls}ForPreTraining")(getattr(transformers, f"{cls}Config")(**kw)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") and not name.startswith(family):
                p.normal_()  # head biases that are not zero must travel too
            if name.startswith(("cls.seq_relationship.weight", "sop_classifier.classifier.weight")):
                p.mul_(50)  # the pooled [CLS] state, not only the bias, decides the sentence logits
    return model


def hf_pretraining_logits(model, x, mask, t):
    out = model(input_ids=x, attention_mask=mask, token_type_ids=t)
    return out.prediction_logits, getattr(out, "seq_relationship_logits", getattr(out, "sop_logits", None))


def ws_pretraining_logits(unit, x, mask, t):
    hidden = unit.encoder(x, mask, t)
    return unit.head(hidden), unit.sentence_head(unit.encoder.pool(hidden))


def assert_same_pretraining(name, a, b, mask):
    assert gap(f"{name}: masked LM", same(a[0], b[0], mask)) < TOL
    assert gap(f"{name}: sentence pair", float((a[1] - b[1]).abs().max())) < TOL


@pytest.mark.parametrize("family,objective", [("bert", "mlm+nsp"), ("albert", "mlm+sop")])
def test_for_pretraining_round_trips_with_its_sentence_head(
    family, objective, small_tokenizer, wiki_extracts, tmp_path
):
    tok = Tokenizer.load(small_tokenizer)
    hf = tiny_for_pretraining(family, tok)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, small_tokenizer), tmp_path / "ws")
    assert json.loads((ws / "config.json").read_text())["warmstart"]["objective"] == objective
    unit = load_unit(ws)  # encoder, MLM head and sentence head, strictly
    x, mask, t = batch(tok, wiki_extracts[:3], pairs=True)
    with torch.no_grad():
        mine = ws_pretraining_logits(unit, x, mask, t)
        assert_same_pretraining(f"{family} import", mine, hf_pretraining_logits(hf, x, mask, t), mask)
        back = transformers.AutoModelForPreTraining.from_pretrained(export_hf(ws, tmp_path / "out")).eval()
        assert type(back).__name__ == type(hf).__name__
        assert_same_pretraining(f"{family} export", hf_pretraining_logits(back, x, mask, t), mine, mask)


@pytest.mark.parametrize("objective", ["mlm+nsp", "mlm+sop"])
def test_a_warmstart_sentence_pair_run_exports_to_for_pretraining(
    objective, small_shards, wiki_extracts, tmp_path
):
    albert = ["model.embedding_size=16", "model.share_layers=true"] if objective == "mlm+sop" else []
    final = pretrain_tiny(small_shards, tmp_path / "run", objective, *albert)
    unit = load_unit(final)
    tok = Tokenizer.load(final)
    back = transformers.AutoModelForPreTraining.from_pretrained(export_hf(final, tmp_path / "hf")).eval()
    assert type(back).__name__ == ("AlbertForPreTraining" if albert else "BertForPreTraining")
    x, mask, t = batch(tok, wiki_extracts[9:12], pairs=True)
    with torch.no_grad():
        assert_same_pretraining(f"{objective} run export", hf_pretraining_logits(back, x, mask, t),
                                ws_pretraining_logits(unit, x, mask, t), mask)  # fmt: skip
