"""Pretraining rows of benchmarks/throughput.py: one builder per family and objective.

Each builder returns a :class:`Row`: warmstart's training step and transformers' on the same shape, the same
real token ids (the packaged wiki-leads text through a tokenizer trained here) and the same objective
semantics, plus the model FLOPs of one step. Full-size presets keep their own vocabulary (gpt2: 50,257;
t5-small: 32,128; bert-base: 30,522) while the ids come from an 8,192-token tokenizer: the compute is the
full model's.

FLOPs of one training step (3 x forward): 6 x the matmul parameters each token goes through, plus
attention (QK^T and AV: 4 x length x width per layer and token forward, x3 for training; the full square,
also for causal masks). Embedding lookups, norms, softmax and the optimizer are not counted.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import torch

from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.tokenization.train import train_tokenizer

TOKENIZER_VOCAB = 8192
BATCHES = 4  # distinct batches cycled through the timed steps
COMPILE = False  # throughput.py --compile: torch.compile each side's module in place (as train.compile does)


@dataclass
class Row:
    name: str
    shape: str
    tokens_per_step: int  # what tokens/s counts (the table's "tokens" column says which)
    flops_per_step: dict  # side -> model FLOPs of one step
    sides: dict = field(default_factory=dict)  # side -> () -> step(batch_index, bf16)
    batches: list = field(default_factory=list)
    counts: str = "input tokens"


@cache
def texts() -> list[str]:
    return list(corpus_texts(["wiki-leads"], DataOptions(label_column=None), "train"))


@cache
def tokenizer(kind: str):
    sentinels = 100 if kind == "unigram" else 0
    out = Path(tempfile.mkdtemp()) / f"tok-{kind}"
    return train_tokenizer(
        texts()[:4000], kind, TOKENIZER_VOCAB, out, show_progress=False, sentinels=sentinels
    )


def windows(tok, width: int, rows: int, sep: int) -> torch.Tensor:
    """``rows`` consecutive windows of ``width`` real token ids, documents separated by ``sep``."""
    need, stream, start = rows * width, [], 4000
    while len(stream) < need:
        for ids in tok.encode_batch(texts()[start : start + 1000]):
            stream += [*ids, sep]
        start += 1000
    return torch.tensor(stream[:need]).view(rows, width)


def preset_model(name: str) -> dict:
    from warmstart.config import load_preset

    return dict(load_preset(name)["model"])


def training_step(module, forward: Callable, device) -> Callable:
    """AdamW around ``forward(batch) -> loss``, fused on both sides: warmstart's fit loop takes torch's fused
    AdamW for plain CPU and CUDA parameters (train/optim.py), and so does Trainer by default (transformers 5:
    ``optim="adamw_torch_fused"``). Until 2026-12-07 both sides ran the ``foreach`` AdamW, which on a CPU
    loops over the tensors op by op: the same update, slower by the same amount on both sides."""
    module.to(device).train()
    opt = torch.optim.AdamW(module.parameters(), lr=1e-4, fused=device.type in ("cpu", "cuda"))
    if COMPILE:
        module.compile()

    def step(batch, bf16: bool):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = forward(batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def on(device, batch: dict) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def collated(collate, ids: torch.Tensor, batch: int, device) -> list[dict]:
    """``BATCHES`` batches of ``batch`` rows of ``ids`` through an objective's collator (seeded masks)."""
    gen = torch.Generator().manual_seed(0)
    return [on(device, collate(ids[i * batch : (i + 1) * batch], gen)) for i in range(BATCHES)]


def seq2seq_row(name: str, layers: tuple, cfg, seq: int, batch: int, flops: int, sides: dict, batches) -> Row:
    return Row(
        name=name,
        shape=f"{layers[0]}+{layers[1]}L/{cfg.d_model}H vocab {cfg.vocab_size} seq {seq} batch {batch}",
        tokens_per_step=seq2seq_tokens(batches[0]),
        flops_per_step={"warmstart": flops, "transformers": flops},
        sides=sides,
        batches=batches,
        counts="input + target tokens",
    )


# ------------------------------------------------------------------------------------------ BERT masked LM
def mlm(preset: str | None, batch: int, seq: int, device) -> Row:
    import transformers

    from warmstart.models.bert import BertConfig, BertModel
    from warmstart.objectives.mlm import IGNORE, MaskedLM, MLMCollator, MLMConfig

    tok = tokenizer("wordpiece")
    shape = preset_model(preset) if preset else {"num_hidden_layers": 4, "hidden_size": 256}
    shape.setdefault("num_attention_heads", shape["hidden_size"] // 64)
    shape.setdefault("intermediate_size", 4 * shape["hidden_size"])
    cfg = BertConfig(vocab_size=30522 if preset else tok.vocab_size, **shape)
    ids = windows(tok, seq - 2, batch * BATCHES, tok.sep_id)
    cls, sep = torch.full((len(ids), 1), tok.cls_id), torch.full((len(ids), 1), tok.sep_id)
    ids = torch.cat([cls, ids, sep], 1)
    collate = MLMCollator(MLMConfig(), tok.mask_id, tok.vocab_size, tok.special_ids)
    batches = collated(collate, ids, batch, device)
    masked = sum(int((b["labels"] != IGNORE).sum()) for b in batches) / BATCHES
    h, i, layers, v = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers, cfg.vocab_size
    tokens = batch * seq
    body = tokens * (6 * layers * (4 * h * h + 2 * h * i) + 12 * layers * seq * h)
    sparse_rows = masked + (-masked % 64)  # warmstart projects the masked rows, in multiples of 64

    def ours():
        unit = MaskedLM(BertModel(cfg), MLMConfig())
        return training_step(unit, lambda b: unit(b)[0], device)

    def theirs():
        hf = transformers.BertConfig(
            vocab_size=v, hidden_size=h, num_hidden_layers=layers, intermediate_size=i,
            num_attention_heads=cfg.num_attention_heads, attn_implementation="sdpa",
        )  # fmt: skip
        model = transformers.BertForMaskedLM(hf)
        return training_step(
            model, lambda b: model(input_ids=b["input_ids"], labels=b["labels"]).loss, device
        )

    return Row(
        name=f"BERT masked LM ({preset or 'small'})",
        shape=f"{layers}L/{h}H vocab {v} seq {seq} batch {batch}",
        tokens_per_step=tokens,
        flops_per_step={
            "warmstart": body + 6 * (h * h + h * v) * sparse_rows,
            "transformers": body + 6 * (h * h + h * v) * tokens,
        },
        sides={"warmstart": ours, "transformers": theirs},
        batches=batches,
    )


# ------------------------------------------------------------------------------------------ GPT causal LM
def clm(preset: str | None, batch: int, seq: int, device) -> Row:
    import transformers

    from warmstart.models.gpt2 import GPT2Config, GPT2Model
    from warmstart.objectives.clm import CausalLM

    tok = tokenizer("bpe")
    shape = preset_model(preset) if preset else {"n_layer": 4, "n_embd": 256, "n_head": 4}
    shape["n_positions"] = max(seq, shape.get("n_positions", 0))
    cfg = GPT2Config(vocab_size=50257 if preset else tok.vocab_size, **shape)
    ids = windows(tok, seq, batch * BATCHES, tok.eos_id)
    batches = [{"input_ids": ids[i * batch : (i + 1) * batch].to(device)} for i in range(BATCHES)]
    h, layers, v = cfg.n_embd, cfg.n_layer, cfg.vocab_size
    inner = cfg.n_inner or 4 * h
    tokens = batch * seq
    flops = tokens * (6 * layers * (4 * h * h + 2 * h * inner) + 12 * layers * seq * h) + 6 * h * v * (
        batch * (seq - 1)
    )

    def ours():
        unit = CausalLM(GPT2Model(cfg))
        return training_step(unit, lambda b: unit(b)[0], device)

    def theirs():
        hf = transformers.GPT2Config(
            vocab_size=v, n_positions=cfg.n_positions, n_embd=h, n_layer=layers, n_head=cfg.n_head,
            bos_token_id=tok.eos_id, eos_token_id=tok.eos_id, attn_implementation="sdpa",
        )  # fmt: skip
        model = transformers.GPT2LMHeadModel(hf)
        return training_step(
            model, lambda b: model(input_ids=b["input_ids"], labels=b["input_ids"]).loss, device
        )

    return Row(
        name=f"GPT causal LM ({preset or 'small'})",
        shape=f"{layers}L/{h}H vocab {v} seq {seq} batch {batch}",
        tokens_per_step=tokens,
        flops_per_step={"warmstart": flops, "transformers": flops},
        sides={"warmstart": ours, "transformers": theirs},
        batches=batches,
    )


# ---------------------------------------------------------------------------- encoder-decoder objectives
def seq2seq_flops(batch: dict, layers: tuple, width: int, inner: int, ff: int, vocab: int) -> int:
    """One training step of an encoder-decoder: encoder tokens through the encoder, decoder tokens
    through self- and cross-attention and the output layer, cross-attention keys/values on encoder tokens."""
    enc_layers, dec_layers = layers
    n, te = batch["input_ids"].shape
    td = batch["decoder_input_ids"].shape[1]
    enc = n * te * (6 * enc_layers * (4 * width * inner + ff * width) + 12 * enc_layers * te * inner)
    dec = n * td * (6 * dec_layers * (6 * width * inner + ff * width) + 12 * dec_layers * (td + te) * inner)
    cross_kv = n * te * 6 * dec_layers * 2 * width * inner
    return enc + dec + cross_kv + n * td * 6 * width * vocab


def seq2seq_tokens(batch: dict) -> int:
    return batch["input_ids"].numel() + batch["decoder_input_ids"].numel()


def _seq2seq_side(unit, model) -> tuple[Callable, Callable]:
    def ours_forward(b):
        return unit(b)[0]

    def theirs_forward(b):
        return model(
            input_ids=b["input_ids"], attention_mask=b["attention_mask"],
            decoder_input_ids=b["decoder_input_ids"], decoder_attention_mask=b["decoder_attention_mask"],
            labels=b["labels"],
        ).loss  # fmt: skip

    return ours_forward, theirs_forward


def span(preset: str, batch: int, seq: int, device) -> Row:
    import transformers

    from warmstart.hub.families.configs import config_to_hf
    from warmstart.models.t5 import T5Config, T5Model
    from warmstart.objectives.span_corruption import (
        SpanCorruption,
        SpanCorruptionCollator,
        SpanCorruptionConfig,
        raw_length,
    )

    tok = tokenizer("unigram")
    cfg = T5Config(vocab_size=32128 if preset != "t5-tiny" else tok.vocab_size, **preset_model(preset))
    span_cfg = SpanCorruptionConfig()
    raw, _ = raw_length(seq, span_cfg.noise_density, span_cfg.mean_span_length)
    ids = windows(tok, raw, batch * BATCHES, tok.eos_id)
    collate = SpanCorruptionCollator.for_tokenizer(span_cfg, tok)
    batches = collated(collate, ids, batch, device)
    ff = cfg.d_ff * (3 if cfg.feed_forward_proj.startswith("gated") else 2)
    inner = cfg.num_heads * cfg.d_kv
    layers = (cfg.num_layers, cfg.num_decoder_layers or cfg.num_layers)
    flops = seq2seq_flops(batches[0], layers, cfg.d_model, inner, ff, cfg.vocab_size)

    def ours():
        unit = SpanCorruption(T5Model(cfg), span_cfg)
        return training_step(unit, _seq2seq_side(unit, None)[0], device)

    def theirs():
        hf = config_to_hf(
            "t5",
            cfg,
            {"pad_token_id": tok.pad_id, "eos_token_id": tok.eos_id, "decoder_start_token_id": tok.pad_id},
            "T5ForConditionalGeneration",
        )
        model = transformers.T5ForConditionalGeneration(transformers.T5Config(**hf))
        return training_step(model, _seq2seq_side(None, model)[1], device)

    sides = {"warmstart": ours, "transformers": theirs}
    return seq2seq_row(f"T5 span corruption ({preset})", layers, cfg, seq, batch, flops, sides, batches)


def denoise(preset: str, batch: int, seq: int, device) -> Row:
    import transformers

    from warmstart.hub.families.configs import config_to_hf
    from warmstart.models.bart import BartConfig, BartModel
    from warmstart.objectives.denoising import Denoising, DenoisingCollator, DenoisingConfig

    tok = tokenizer("bpe")
    cfg = BartConfig(vocab_size=tok.vocab_size, **preset_model(preset))
    noise = DenoisingConfig()
    ids = windows(tok, seq - 2, batch * BATCHES, tok.eos_id)
    collate = DenoisingCollator(noise, tok)
    batches = collated(collate, ids, batch, device)
    layers = (cfg.encoder_layers, cfg.decoder_layers)
    flops = seq2seq_flops(
        batches[0], layers, cfg.d_model, cfg.d_model, 2 * cfg.encoder_ffn_dim, cfg.vocab_size
    )

    def ours():
        unit = Denoising(BartModel(cfg), noise)
        return training_step(unit, _seq2seq_side(unit, None)[0], device)

    def theirs():
        ids_ = {"pad_token_id": tok.pad_id, "bos_token_id": tok.bos_id, "eos_token_id": tok.eos_id,
                "decoder_start_token_id": tok.eos_id}  # fmt: skip
        hf = config_to_hf("bart", cfg, ids_, "BartForConditionalGeneration")
        model = transformers.BartForConditionalGeneration(transformers.BartConfig(**hf))
        return training_step(model, _seq2seq_side(None, model)[1], device)

    sides = {"warmstart": ours, "transformers": theirs}
    return seq2seq_row(f"BART denoising ({preset})", layers, cfg, seq, batch, flops, sides, batches)
