"""`warmstart prompt` on encoder-decoders (issue 40): T5 and BART score each label word as the decoder's whole
output (its tokens, then eos) given the prompt as the encoder's input, equal to the log-likelihood computed by
hand whatever the batching; tiny T5 and BART runs go through the command line."""

import json

import pytest
import torch

from tests.helpers.runs import pretrain_family
from warmstart.cli.main import main
from warmstart.commands.prompt import PromptConfig, build_prompt, label_scores
from warmstart.models.bart import BartConfig, BartModel
from warmstart.models.t5 import T5Config, T5Model
from warmstart.tokenization.tokenizer import Tokenizer

DEMOS = [
    {"text": "a wonderful, moving film", "label": "fresh"},
    {"text": "a dull and lifeless mess", "label": "rotten"},
]
PROMPTS = [
    build_prompt(DEMOS, "an instant classic", PromptConfig()),
    "Review: short\nAnswer: ",
    "Verdict on the film, in one line:\n",
]


def tiny(arch: str, tok):
    torch.manual_seed(0)
    if arch == "t5":
        shape = dict(d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2)
        return T5Model(T5Config(vocab_size=tok.vocab_size, **shape))
    shape = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                 decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64)  # fmt: skip
    return BartModel(BartConfig(vocab_size=tok.vocab_size, max_position_embeddings=128, **shape))


def by_hand(model, tok, prompt: str, word: str, start: int) -> float:
    """log p(word's tokens, eos | prompt) in one unpadded pass (BART's given <s> not scored)."""
    first = [tok.bos_id] if model.bos_first else []
    target = first + tok.encode(word) + [tok.eos_id]
    src = torch.tensor([first + tok.encode(prompt.rstrip(" ")) + [tok.eos_id]])
    with torch.no_grad():
        hidden = model.eval()(src, None, torch.tensor([[start] + target[:-1]]))
        logp = model.lm_logits(hidden)[0].float().log_softmax(-1)
    return sum(logp[j, t].item() for j, t in enumerate(target) if j >= len(first))


@pytest.mark.parametrize("arch", ["t5", "bart"])
def test_label_words_are_scored_as_the_decoders_output(arch, bpe_shards, unigram_shards):
    tok = Tokenizer.load((unigram_shards if arch == "t5" else bpe_shards) / "tokenizer")
    model, start = tiny(arch, tok), tok.eos_id if arch == "bart" else tok.pad_id
    words = ["fresh tomato salad", "rotten", "a"]
    assert len(tok.encode(words[0])) > 1  # multi-token words are scored whole
    want = torch.tensor(
        [[by_hand(model, tok, p, w, start) for w in words] for p in PROMPTS], dtype=torch.float64
    )
    model.train()
    for batch_size in (1, 4, 16):  # padded sources and targets, several prompts per pass
        got = label_scores(model, tok, PROMPTS, words, batch_size=batch_size, decoder_start=start)
        assert torch.allclose(got, want, atol=1e-4), (got, want)
    assert model.training  # scored in eval mode, then put back
    assert float((want[:, 0] - want[:, 2]).abs().min()) > 1e-3  # the words' scores differ


@pytest.mark.parametrize("arch", ["t5", "bart"])
def test_prompt_command_on_tiny_t5_and_bart_runs(arch, bpe_shards, unigram_shards, tmp_path, capsys):
    run = tmp_path / "run"
    extra = ["model.max_position_embeddings=256"] if arch == "bart" else []
    pretrain_family(arch, unigram_shards if arch == "t5" else bpe_shards, run, steps=2, extra=extra)
    argv = ["prompt", str(run), "--dataset", "rotten-tomatoes", "--shots", "0,1", "--seeds", "1"]
    code = main(argv + ["--out", str(tmp_path / "p"), "max_examples=8", "calibrate=true"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "| k | accuracy (mean ± std) | majority |" in out.out
    saved = json.loads((tmp_path / "p" / "prompting.json").read_text())
    assert [r["k"] for r in saved["results"]] == [0, 1] and saved["examples"] == 8
    for r in saved["results"]:
        assert all(0 <= a <= 1 for a in r["accuracy"]["per_seed"] + r["calibrated"]["per_seed"])
