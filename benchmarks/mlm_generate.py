"""Generating from a masked LM vs a same-size GPT-2: new tokens per second, one prompt, in one process.

Lecture 001: "you could put [MASK] at the end repeatedly, but this is slow". warmstart's masked-LM writer
(inference/mlm_generate.py) runs a whole forward pass over the sequence for every new token (left-to-right)
or for every position of every sweep (gibbs), where GPT-2 feeds only the new token and reuses its key/value
cache. Same shape on both sides (layers, hidden, heads, FFN 4 x hidden), same vocabulary size (a WordPiece
trained on the packaged wiki-leads text), random weights (the time does not depend on them), greedy; the
prompt is the start of a real wiki-leads text. Trials alternate between the rows so that machine noise hits
all of them; the median is reported. Prints a Markdown table and one JSON line.

    python benchmarks/mlm_generate.py --size small --new 64 --trials 3
    python benchmarks/mlm_generate.py --size base --device cuda
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.generation.decode import GenerationConfig, generate
from warmstart.inference.mlm_generate import MaskedGenerator
from warmstart.models.bert import BertConfig, BertModel
from warmstart.models.gpt2 import GPT2Config, GPT2Model
from warmstart.objectives.mlm import MLMHead
from warmstart.tokenization.train import train_tokenizer

PROMPT = 16  # tokens of the prompt
SIZES = {  # (layers, hidden, heads)
    "tiny": (2, 64, 2),
    "small": (4, 256, 4),
    "base": (12, 768, 12),
}


def writers(size: str, vocab: int, positions: int, device: torch.device, sweeps: int):
    """{row name: write(prompt ids, n) -> new ids} for the masked LM and GPT-2 of ``size``."""
    layers, hidden, heads = SIZES[size]
    texts = list(corpus_texts(["wiki-leads"], DataOptions(label_column=None), "train"))
    tok = train_tokenizer(
        texts[:2000], "wordpiece", vocab, Path(tempfile.mkdtemp()) / "tok", show_progress=False
    )
    bert = BertModel(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=4 * hidden,
            max_position_embeddings=positions,
        )
    )
    head = MLMHead(hidden, tok.vocab_size, "gelu", 1e-12, bert.word_embeddings)
    mlm = MaskedGenerator(bert.eval().to(device), head.eval().to(device), tok)
    gpt = GPT2Model(
        GPT2Config(
            vocab_size=tok.vocab_size, n_positions=positions, n_embd=hidden, n_layer=layers, n_head=heads
        )
    )
    gpt = gpt.eval().to(device)
    greedy = GenerationConfig(strategy="greedy", max_new_tokens=positions)

    def masked(sampling):
        return lambda p, n: mlm.generate(p, n, greedy, sampling, torch.Generator().manual_seed(0), sweeps)

    def causal(cache):
        def write(p, n):
            cfg = GenerationConfig(strategy="greedy", max_new_tokens=n, use_cache=cache, stop_on_eos=False)
            return generate(gpt, [p], cfg, eos_id=None, pad_id=0)[0]

        return write

    rows = {
        "masked LM, left-to-right": masked("left-to-right"),
        f"masked LM, gibbs ({sweeps} sweeps)": masked("gibbs"),
        "gpt2, key/value cache": causal(True),
        "gpt2, no cache": causal(False),
    }
    prompt = tok.encode(texts[2000])[:PROMPT]
    return rows, prompt


def timed(write, prompt, n: int, device: torch.device) -> float:
    """New tokens per second of one call."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    new = write(prompt, n)
    sync()
    assert len(new) == n, (len(new), n)
    return n / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=list(SIZES), default="small", help="shape of both models")
    p.add_argument("--vocab", type=int, default=8192, help="WordPiece vocabulary size of both models")
    p.add_argument("--new", type=int, default=64, help="new tokens per prompt")
    p.add_argument("--sweeps", type=int, default=3, help="gibbs: passes over the new positions")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    a = p.parse_args()
    device = torch.device(a.device)
    torch.manual_seed(0)
    rows, prompt = writers(a.size, a.vocab, PROMPT + 2 + a.new, device, a.sweeps)  # + [CLS] and [SEP]
    for write in rows.values():  # warm-up: one short call each
        write(prompt, 2)
    speeds: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(a.trials):
        for name, write in rows.items():
            speeds[name].append(timed(write, prompt, a.new, device))
    medians = {name: statistics.median(v) for name, v in speeds.items()}
    cached = medians["gpt2, key/value cache"]
    layers, hidden, heads = SIZES[a.size]
    print(f"{a.size}: {layers} layers, hidden {hidden}, {heads} heads, vocab {a.vocab}, {a.device}, "
          f"{len(prompt)}-token prompt, {a.new} new tokens, median of {a.trials}")  # fmt: skip
    print("| writer | new tokens/s | x gpt2 (cached) |\n|---|---:|---:|")
    for name, v in medians.items():
        print(f"| {name} | {v:,.1f} | {v / cached:.2f} |")
    per_s = {k: round(v, 2) for k, v in medians.items()}
    record = {"size": a.size, "device": a.device, "new_tokens": a.new, "prompt_tokens": len(prompt),
              "sweeps": a.sweeps, "trials": a.trials, "tokens_per_s": per_s}  # fmt: skip
    print(json.dumps(record))


if __name__ == "__main__":
    main()
