"""BART-style encoder-decoder: learned positions (offset by 2, as fairseq), LayerNorm on the embeddings,
post-LN blocks, GELU, cross-attention, output tied to the shared embedding plus a fixed logits bias.

Config field names follow Hugging Face's BartConfig.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.models.encoder_decoder import EncoderDecoder
from warmstart.nn.block import Block, BlockSpec
from warmstart.nn.dropout import Dropout
from warmstart.nn.init import init_weights

POSITION_OFFSET = 2  # fairseq's learned positions start at index 2


@dataclass
class BartConfig:
    vocab_size: int = opt(50265, "vocabulary size (set from the tokenizer when one is given)")
    d_model: int = opt(768, "width of the hidden states")
    encoder_layers: int = opt(6, "encoder blocks")
    decoder_layers: int = opt(6, "decoder blocks")
    encoder_attention_heads: int = opt(12, "attention heads per encoder block")
    decoder_attention_heads: int = opt(12, "attention heads per decoder block")
    encoder_ffn_dim: int = opt(3072, "width of the encoder feed-forward layer")
    decoder_ffn_dim: int = opt(3072, "width of the decoder feed-forward layer")
    max_position_embeddings: int = opt(1024, "longest sequence the learned positions cover")
    activation_function: str = opt("gelu", "feed-forward activation: gelu, gelu_new, relu, silu")
    dropout: float = opt(0.1, "dropout on embeddings and sub-layer outputs")
    attention_dropout: float = opt(0.0, "dropout on attention probabilities")
    init_std: float = opt(0.02, "std of the normal initialisation")
    scale_embedding: bool = opt(False, "multiply token embeddings by sqrt(d_model)")
    layer_norm_eps: float = opt(1e-5, "LayerNorm epsilon")

    model_type = "bart"

    @property
    def hidden_size(self) -> int:
        return self.d_model

    @property
    def max_length(self) -> int:
        return self.max_position_embeddings


class BartModel(EncoderDecoder):
    # capabilities (what callers ask instead of testing the family's name)
    generates = True  # has lm_logits: writes text
    decoder_only = False  # one causal stack: a prompt continues, no encoder
    bos_first = True  # texts start with <s> (BART)

    def __init__(self, config: BartConfig):
        super().__init__()
        c = self.config = config
        for side in ("encoder", "decoder"):
            heads = getattr(c, f"{side}_attention_heads")
            if c.d_model % heads:
                raise WarmstartError(
                    f"model.d_model {c.d_model} is not divisible by model.{side}_attention_heads {heads}",
                    "choose a head count that divides the width",
                )
        self.shared = nn.Embedding(c.vocab_size, c.d_model)
        n_pos = c.max_position_embeddings + POSITION_OFFSET
        self.encoder_positions = nn.Embedding(n_pos, c.d_model)
        self.decoder_positions = nn.Embedding(n_pos, c.d_model)
        self.encoder_embed_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.decoder_embed_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)

        def spec(side: str, cross: bool) -> BlockSpec:
            return BlockSpec(
                c.d_model,
                getattr(c, f"{side}_attention_heads"),
                getattr(c, f"{side}_ffn_dim"),
                c.activation_function,
                c.dropout,
                c.attention_dropout,
                c.layer_norm_eps,
                pre_ln=False,
                cross=cross,
            )

        self.encoder_layers = nn.ModuleList(Block(spec("encoder", False)) for _ in range(c.encoder_layers))
        self.decoder_layers = nn.ModuleList(Block(spec("decoder", True)) for _ in range(c.decoder_layers))
        self.encoder_norm = self.decoder_norm = None
        self.drop = Dropout(c.dropout)
        self.register_buffer("final_logits_bias", torch.zeros(c.vocab_size), persistent=True)
        self.embed_scale = math.sqrt(c.d_model) if c.scale_embedding else 1.0
        init_weights(self, c.init_std)

    def embed(self, ids, decoder: bool, offset: int = 0, tokens=None):
        t = ids.shape[1]
        if offset + t > self.config.max_position_embeddings:
            raise WarmstartError(
                f"{offset + t} tokens exceed the model's {self.config.max_position_embeddings} positions",
                "shorten the input or lower the maximum length",
            )
        positions = self.decoder_positions if decoder else self.encoder_positions
        norm = self.decoder_embed_norm if decoder else self.encoder_embed_norm
        pos = positions.weight[offset + POSITION_OFFSET : offset + t + POSITION_OFFSET]
        tokens = self.shared(ids) if tokens is None else tokens
        return self.drop(norm(tokens * self.embed_scale + pos))

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        h, weight, bias = self.linear_head(hidden)
        return h @ weight.T + bias

    def linear_head(self, hidden: torch.Tensor) -> tuple:
        """(h, W, bias): the head is h @ W.T + bias (the fused training loss, lm_loss.head_loss, takes these;
        the bias is a constant buffer)."""
        return hidden, self.shared.weight, self.final_logits_bias


def _stack(ours: str, theirs: str, cross: bool):
    L = f"{theirs}.layers.{{i}}"
    keys = []
    subs = [("attn", "self_attn", "norm1", "self_attn_layer_norm")]
    if cross:
        subs.append(("cross", "encoder_attn", "norm_cross", "encoder_attn_layer_norm"))
    for mod, hf_mod, nrm, hf_nrm in subs:
        for p in ("weight", "bias"):
            keys += [
                (f"{ours}.{{i}}.{mod}.out.{p}", f"{L}.{hf_mod}.out_proj.{p}"),
                (f"{ours}.{{i}}.{nrm}.{p}", f"{L}.{hf_nrm}.{p}"),
            ]
    for p in ("weight", "bias"):
        keys += [
            (f"{ours}.{{i}}.mlp.up.{p}", f"{L}.fc1.{p}"),
            (f"{ours}.{{i}}.mlp.down.{p}", f"{L}.fc2.{p}"),
            (f"{ours}.{{i}}.norm2.{p}", f"{L}.final_layer_norm.{p}"),
        ]
    fused = [
        (f"{ours}.{{i}}.attn.qkv.{p}", [f"{L}.self_attn.{x}_proj.{p}" for x in "qkv"])
        for p in ("weight", "bias")
    ]
    if cross:
        for p in ("weight", "bias"):
            keys.append((f"{ours}.{{i}}.cross.q.{p}", f"{L}.encoder_attn.q_proj.{p}"))
            fused.append((f"{ours}.{{i}}.cross.kv.{p}", [f"{L}.encoder_attn.{x}_proj.{p}" for x in "kv"]))
    return keys, fused


def hf_key_map(config: BartConfig) -> list[tuple[list, list, int]]:
    """[(keys, fused, layers)] per stack, for :mod:`warmstart.models.keymap` (BartModel names; add the
    prefix "model." for BartForConditionalGeneration)."""
    enc_keys, enc_fused = _stack("encoder_layers", "encoder", False)
    dec_keys, dec_fused = _stack("decoder_layers", "decoder", True)
    top = [("shared.weight", "shared.weight")]
    for side in ("encoder", "decoder"):
        top.append((f"{side}_positions.weight", f"{side}.embed_positions.weight"))
        top += [(f"{side}_embed_norm.{p}", f"{side}.layernorm_embedding.{p}") for p in ("weight", "bias")]
    return [
        (enc_keys, enc_fused, config.encoder_layers),
        (dec_keys, dec_fused, config.decoder_layers),
        (top, [], 1),
    ]
