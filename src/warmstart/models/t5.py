"""T5-style encoder-decoder: relative position bias (bucketed, computed in the first block of each stack
and shared by the others), RMS LayerNorm without bias, no bias in any projection, unscaled attention.
v1.0: ReLU feed-forward, output tied to the input embedding (states scaled by d_model^-0.5 first);
v1.1: gated-GELU feed-forward, untied head.

Config field names follow Hugging Face's T5Config.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.models.encoder_decoder import EncoderDecoder
from warmstart.nn.block import Block, BlockSpec
from warmstart.nn.dropout import Dropout
from warmstart.nn.relative_bias import RelativePositionBias
from warmstart.nn.rms_norm import RMSNorm

FEED_FORWARD = {
    "relu": ("relu", False),
    "gelu": ("gelu", False),
    "gated-gelu": ("gelu_new", True),
    "gated-silu": ("silu", True),
}


@dataclass
class T5Config:
    vocab_size: int = opt(32128, "vocabulary size (set from the tokenizer when one is given)")
    d_model: int = opt(512, "width of the hidden states")
    d_kv: int = opt(64, "width of each attention head")
    d_ff: int = opt(2048, "width of the feed-forward layer")
    num_layers: int = opt(6, "encoder blocks")
    num_decoder_layers: int | None = opt(None, "decoder blocks (default: num_layers)")
    num_heads: int = opt(8, "attention heads per block")
    relative_attention_num_buckets: int = opt(32, "buckets of the relative position bias")
    relative_attention_max_distance: int = opt(128, "distance beyond which positions share a bucket")
    dropout_rate: float = opt(0.1, "dropout on embeddings, sub-layer outputs and attention")
    layer_norm_epsilon: float = opt(1e-6, "RMS norm epsilon")
    initializer_factor: float = opt(1.0, "scale of T5's initialisation")
    feed_forward_proj: str = opt("relu", "relu, gelu (v1.0 style) or gated-gelu, gated-silu (v1.1)")
    tie_word_embeddings: bool = opt(True, "output head tied to the input embedding (v1.0) or own (v1.1)")
    max_length: int = opt(512, "longest input or target the data may produce (T5 has no position table)")

    model_type = "t5"

    @property
    def hidden_size(self) -> int:
        return self.d_model


class T5Model(EncoderDecoder):
    # capabilities (what callers ask instead of testing the family's name)
    generates = True  # has lm_logits: writes text
    decoder_only = False  # one causal stack: a prompt continues, no encoder
    bos_first = False  # texts start with <s> (BART)

    def __init__(self, config: T5Config):
        super().__init__()
        c = self.config = config
        if c.feed_forward_proj not in FEED_FORWARD:
            raise WarmstartError(
                f"unknown model.feed_forward_proj '{c.feed_forward_proj}'",
                f"use one of {sorted(FEED_FORWARD)}",
            )
        act, gated = FEED_FORWARD[c.feed_forward_proj]
        kw = dict(
            hidden=c.d_model,
            heads=c.num_heads,
            inner=c.d_ff,
            act=act,
            dropout=c.dropout_rate,
            attn_dropout=c.dropout_rate,
            eps=c.layer_norm_epsilon,
            rms_norm=True,
            bias=False,
            head_dim=c.d_kv,
            scale=1.0,
            gated=gated,
        )
        self.shared = nn.Embedding(c.vocab_size, c.d_model)
        self.encoder_layers = nn.ModuleList(Block(BlockSpec(**kw)) for _ in range(c.num_layers))
        n_dec = c.num_decoder_layers or c.num_layers
        self.decoder_layers = nn.ModuleList(Block(BlockSpec(**kw, cross=True)) for _ in range(n_dec))
        buckets, distance = c.relative_attention_num_buckets, c.relative_attention_max_distance
        self.encoder_bias = RelativePositionBias(buckets, distance, c.num_heads, bidirectional=True)
        self.decoder_bias = RelativePositionBias(buckets, distance, c.num_heads, bidirectional=False)
        self.encoder_norm = RMSNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.decoder_norm = RMSNorm(c.d_model, eps=c.layer_norm_epsilon)
        self.drop = Dropout(c.dropout_rate)
        self.lm_head = None if c.tie_word_embeddings else nn.Linear(c.d_model, c.vocab_size, bias=False)
        self._init()

    @torch.no_grad()
    def _init(self) -> None:
        """T5's initialisation (factor f): embeddings N(0, f); attention Q N(0, f (d d_kv)^-0.5), K and
        V N(0, f d^-0.5), output N(0, f (h d_kv)^-0.5); feed-forward in N(0, f d^-0.5), out
        N(0, f d_ff^-0.5)."""
        c, f = self.config, self.config.initializer_factor
        d, inner = c.d_model, c.num_heads * c.d_kv
        self.shared.weight.normal_(0, f)
        if self.lm_head is not None:
            self.lm_head.weight.normal_(0, f)
        for m in (self.encoder_bias, self.decoder_bias):
            m.bias.weight.normal_(0, f * d**-0.5)
        for block in [*self.encoder_layers, *self.decoder_layers]:
            block.attn.qkv.weight[:inner].normal_(0, f * (d * c.d_kv) ** -0.5)
            block.attn.qkv.weight[inner:].normal_(0, f * d**-0.5)
            block.attn.out.weight.normal_(0, f * inner**-0.5)
            if block.cross is not None:
                block.cross.q.weight.normal_(0, f * (d * c.d_kv) ** -0.5)
                block.cross.kv.weight.normal_(0, f * d**-0.5)
                block.cross.out.weight.normal_(0, f * inner**-0.5)
            for lin in (block.mlp.up, block.mlp.gate):
                if lin is not None:
                    lin.weight.normal_(0, f * d**-0.5)
            block.mlp.down.weight.normal_(0, f * c.d_ff**-0.5)

    def embed(self, ids, decoder: bool, offset: int = 0, tokens=None):
        return self.drop(self.shared(ids) if tokens is None else tokens)

    def position_bias(self, decoder: bool, query_len: int, key_len: int, offset: int = 0):
        return (self.decoder_bias if decoder else self.encoder_bias)(query_len, key_len, offset)

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        h, weight, _ = self.linear_head(hidden)
        return h @ weight.T

    def linear_head(self, hidden: torch.Tensor) -> tuple:
        """(h, W, bias): the head is h @ W.T (the fused training loss, lm_loss.head_loss, takes these)."""
        if self.lm_head is not None:
            return hidden, self.lm_head.weight, None
        return hidden * self.config.d_model**-0.5, self.shared.weight, None


def _stack_keys(ours: str, theirs: str, decoder: bool):
    mlp = "layer.2" if decoder else "layer.1"
    keys = [
        (f"{ours}.{{i}}.norm1.weight", f"{theirs}.block.{{i}}.layer.0.layer_norm.weight"),
        (f"{ours}.{{i}}.attn.out.weight", f"{theirs}.block.{{i}}.layer.0.SelfAttention.o.weight"),
        (f"{ours}.{{i}}.norm2.weight", f"{theirs}.block.{{i}}.{mlp}.layer_norm.weight"),
        (f"{ours}.{{i}}.mlp.down.weight", f"{theirs}.block.{{i}}.{mlp}.DenseReluDense.wo.weight"),
    ]
    fused = [
        (
            f"{ours}.{{i}}.attn.qkv.weight",
            [f"{theirs}.block.{{i}}.layer.0.SelfAttention.{p}.weight" for p in "qkv"],
        )
    ]
    if decoder:
        keys += [
            (f"{ours}.{{i}}.norm_cross.weight", f"{theirs}.block.{{i}}.layer.1.layer_norm.weight"),
            (f"{ours}.{{i}}.cross.q.weight", f"{theirs}.block.{{i}}.layer.1.EncDecAttention.q.weight"),
            (f"{ours}.{{i}}.cross.out.weight", f"{theirs}.block.{{i}}.layer.1.EncDecAttention.o.weight"),
        ]
        fused.append(
            (
                f"{ours}.{{i}}.cross.kv.weight",
                [f"{theirs}.block.{{i}}.layer.1.EncDecAttention.{p}.weight" for p in "kv"],
            )
        )
    return keys, fused, mlp


def hf_key_map(config: T5Config) -> list[tuple[list, list, int]]:
    """[(keys, fused, layers)] per stack, for :mod:`warmstart.models.keymap` (T5ForConditionalGeneration)."""
    out = []
    gated = FEED_FORWARD[config.feed_forward_proj][1]
    n_dec = config.num_decoder_layers or config.num_layers
    for ours, theirs, decoder, n in (
        ("encoder_layers", "encoder", False, config.num_layers),
        ("decoder_layers", "decoder", True, n_dec),
    ):
        keys, fused, mlp = _stack_keys(ours, theirs, decoder)
        ff = f"{theirs}.block.{{i}}.{mlp}.DenseReluDense"
        if gated:
            keys += [
                (f"{ours}.{{i}}.mlp.gate.weight", f"{ff}.wi_0.weight"),
                (f"{ours}.{{i}}.mlp.up.weight", f"{ff}.wi_1.weight"),
            ]
        else:
            keys.append((f"{ours}.{{i}}.mlp.up.weight", f"{ff}.wi.weight"))
        out.append((keys, fused, n))
    top = [
        ("shared.weight", "shared.weight"),
        ("encoder_norm.weight", "encoder.final_layer_norm.weight"),
        ("decoder_norm.weight", "decoder.final_layer_norm.weight"),
        ("encoder_bias.bias.weight", "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
        ("decoder_bias.bias.weight", "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
    ]
    if not config.tie_word_embeddings:
        top.append(("lm_head.weight", "lm_head.weight"))
    out.append((top, [], 1))
    return out
