"""Issue 40, an export writes the text `warmstart generate` writes: for every family that generates (gpt2;
t5 and bart, text-to-text), transformers' pipeline on the export, greedy, gives the text `warmstart generate`
gives on the run for the same prompt (one with a leading space, one with punctuation), with no <s> or </s>
in it. GPT-2: a tiny run pretrained on the byte-level BPE shards (their tokenizer trained as `tokenizer
train --kind bpe` trains it); T5 (unigram with sentinels) and BART (bpe): the tiny transformers models of
varied greedy output the import tests use, imported with those tokenizers."""

import pytest
import torch

from tests.helpers.cli import run
from tests.helpers.hub import hf_dir, tiny_bart, tiny_t5
from tests.helpers.shapes import SHAPES
from warmstart.checkpoints.load import load_generator
from warmstart.generation.decode import prompt_ids
from warmstart.hub.convert import export_hf, import_hf
from warmstart.tokenization.tokenizer import Tokenizer

transformers = pytest.importorskip("transformers")
pytestmark = [pytest.mark.integration, pytest.mark.parity]
PROMPTS = ["The city of", " The river", "In 1990, the"]
NEW = 8  # new tokens per prompt


def pretrained_gpt2(shards, out):
    """A tiny GPT-2 pretrained 6 steps on ``shards``: a run directory."""
    from warmstart.commands.pretrain import pretrain

    flags = {"out": str(out), "arch": "gpt2", "data": {"shards": str(shards)}, "train": {"steps": 6}}
    extra = ["data.seq_len=64", "train.batch_size=8", "train.progress=false", "train.save_every=0",
             "train.eval_every=0", "train.eval_batches=1"]  # fmt: skip
    pretrain(None, None, flags, SHAPES["gpt2"] + extra)
    return out


def imported(make, tokenizer_dir, root):
    """The transformers model ``make(tokenizer)`` imported as a warmstart model directory."""
    model = make(Tokenizer.load(tokenizer_dir))
    return import_hf(hf_dir(root / "hf", model, tokenizer_dir), root / "ws")


@pytest.fixture(scope="module", params=["gpt2", "t5", "bart"])
def exported(request, bpe_shards, unigram_shards, tmp_path_factory):
    """(family, the run or model directory `warmstart generate` reads, its export)."""
    arch, root = request.param, tmp_path_factory.mktemp(request.param)
    if arch == "gpt2":
        source = pretrained_gpt2(bpe_shards, root / "run")
    elif arch == "t5":
        source = imported(lambda tok: tiny_t5(tok, "gated-gelu", False), unigram_shards / "tokenizer", root)
    else:
        source = imported(tiny_bart, bpe_shards / "tokenizer", root)
    return arch, source, export_hf(source, root / "export")


def warmstart_texts(capsys, source) -> list[str]:
    """`warmstart generate SOURCE --prompt P max_new_tokens=NEW` (greedy) for each prompt: its text."""
    texts = []
    for prompt in PROMPTS:
        code, out, err = run(capsys, "generate", source, "--prompt", prompt, f"max_new_tokens={NEW}")
        assert code == 0, err
        texts.append(out.removesuffix("\n"))
    return texts


def transformers_texts(arch: str, out) -> list[str]:
    """The texts of transformers' pipeline on the export, greedy: text-generation for GPT-2,
    text2text-generation for T5 and BART (transformers 5 dropped it: then what it did, generate and decode
    without the special tokens)."""
    kw = dict(max_new_tokens=NEW, do_sample=False, num_beams=1)
    if arch == "gpt2":
        pipe = transformers.pipeline("text-generation", model=str(out))
        return [pipe(p, **kw)[0]["generated_text"] for p in PROMPTS]
    kw["use_cache"] = False  # transformers 5.23: T5 with more decoder than encoder layers fails cached
    if "text2text-generation" in getattr(transformers.pipelines, "SUPPORTED_TASKS", {}):
        pipe = transformers.pipeline("text2text-generation", model=str(out))
        return [pipe(p, **kw)[0]["generated_text"] for p in PROMPTS]
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(out).eval()
    with torch.no_grad():
        outputs = [model.generate(**tokenizer(p, return_tensors="pt"), **kw)[0] for p in PROMPTS]
    return [tokenizer.decode(ids, skip_special_tokens=True) for ids in outputs]


def test_the_exported_tokenizer_encodes_a_prompt_as_warmstart_feeds_it(exported):
    arch, source, out = exported
    model, tokenizer, _ = load_generator(source)
    auto = transformers.AutoTokenizer.from_pretrained(out)
    assert auto(PROMPTS)["input_ids"] == [prompt_ids(tokenizer, p, model) for p in PROMPTS]
    if arch == "gpt2":  # a document start, as in the packed training stream: no <s> ... </s> around it
        assert auto("The city")["input_ids"] == [tokenizer.eos_id, *tokenizer.encode("The city")]


def test_the_pipeline_writes_the_text_warmstart_generate_writes(exported, capsys):
    arch, source, out = exported
    ours = warmstart_texts(capsys, source)
    theirs = transformers_texts(arch, out)
    assert theirs == ours
    assert not any(s in t for t in theirs for s in ("<s>", "</s>", "<pad>"))
    if arch == "gpt2":  # the prompt and a continuation, its spaces kept
        assert all(t.startswith(p) and len(t) > len(p) for t, p in zip(theirs, PROMPTS)), theirs
    else:
        assert all(t.strip() for t in theirs) and len(set(theirs)) > 1, theirs  # varied, not empty


def test_the_export_generates_with_warmstarts_defaults(exported, capsys):
    """generation_config.json: without it transformers stops at max_length 20 (prompt included), where
    `warmstart generate` writes up to 50 new tokens; with it the defaults are the same on both sides."""
    arch, source, out = exported
    config = transformers.GenerationConfig.from_pretrained(out)
    assert config.max_new_tokens == 50 and not config.do_sample and config.num_beams == 1
    model, tokenizer, _ = load_generator(source)
    assert config.eos_token_id == tokenizer.eos_id
    if arch == "gpt2":  # the pipeline with no lengths given writes what `warmstart generate` writes
        code, ours, err = run(capsys, "generate", source, "--prompt", PROMPTS[0])
        assert code == 0, err
        theirs = transformers.pipeline("text-generation", model=str(out))(PROMPTS[0])[0]["generated_text"]
        assert theirs == ours.removesuffix("\n")
