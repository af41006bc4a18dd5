"""GPT-2-style decoder: learned positions, pre-LN causal blocks, final LayerNorm, output tied to the input
embedding. ``decode`` takes and returns a key/value cache for generation.

Config field names follow Hugging Face's GPT2Config so a checkpoint's config.json reads in both worlds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.nn.attention import decoder_mask
from warmstart.nn.block import Block, BlockSpec, cache_length
from warmstart.nn.checkpointing import Checkpointing
from warmstart.nn.dropout import Dropout
from warmstart.nn.init import init_weights


@dataclass
class GPT2Config:
    vocab_size: int = opt(50257, "vocabulary size (set from the tokenizer when one is given)")
    n_positions: int = opt(1024, "longest sequence the learned positions cover (the context)")
    n_embd: int = opt(768, "width of the hidden states")
    n_layer: int = opt(12, "number of transformer blocks")
    n_head: int = opt(12, "attention heads per block")
    n_inner: int | None = opt(None, "width of the feed-forward layer (default 4 x n_embd)")
    activation_function: str = opt("gelu_new", "feed-forward activation: gelu_new, gelu, relu, silu")
    resid_pdrop: float = opt(0.1, "dropout on block outputs")
    embd_pdrop: float = opt(0.1, "dropout on the embeddings")
    attn_pdrop: float = opt(0.1, "dropout on attention probabilities")
    layer_norm_epsilon: float = opt(1e-5, "LayerNorm epsilon")
    initializer_range: float = opt(0.02, "std of the normal initialisation")

    model_type = "gpt2"

    @property
    def hidden_size(self) -> int:
        return self.n_embd

    @property
    def max_length(self) -> int:
        return self.n_positions


class GPT2Model(Checkpointing, nn.Module):
    """``forward(input_ids, attention_mask=None)`` -> (B, T, H) states after the final LayerNorm;
    ``lm_logits(hidden)`` -> (B, T, V) through the tied embedding."""

    # capabilities (what callers ask instead of testing the family's name)
    generates = True  # has lm_logits: writes text
    decoder_only = True  # one causal stack: a prompt continues, no encoder
    bos_first = False  # texts start with <s> (BART)

    def __init__(self, config: GPT2Config):
        super().__init__()
        c = config
        if c.n_embd % c.n_head:
            raise WarmstartError(
                f"model.n_embd {c.n_embd} is not divisible by model.n_head {c.n_head}",
                "choose a head count that divides the width",
            )
        self.config = c
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.n_positions, c.n_embd)
        self.drop = Dropout(c.embd_pdrop)
        spec = BlockSpec(
            c.n_embd,
            c.n_head,
            c.n_inner or 4 * c.n_embd,
            c.activation_function,
            c.resid_pdrop,
            c.attn_pdrop,
            c.layer_norm_epsilon,
        )
        self.layers = nn.ModuleList(Block(spec) for _ in range(c.n_layer))
        self.final_norm = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        init_weights(self, c.initializer_range)
        for block in self.layers:  # GPT-2: residual projections scaled by 1/sqrt(2 x layers)
            for proj in (block.attn.out, block.mlp.down):
                nn.init.normal_(proj.weight, std=c.initializer_range / math.sqrt(2 * c.n_layer))

    @property
    def word_embeddings(self) -> nn.Embedding:
        return self.wte

    def forward(self, input_ids, attention_mask=None) -> torch.Tensor:
        return self.decode(input_ids, attention_mask)[0]

    def decode(self, input_ids, attention_mask=None, past=None, position_ids=None):
        """(hidden, present). ``attention_mask`` (B, past + T) covers cached and new positions (left
        padding allowed: positions then count only real tokens); ``past`` is an earlier ``present``."""
        t = input_ids.shape[1]
        past_len = cache_length(past)
        if position_ids is None and attention_mask is None:
            position_ids = torch.arange(past_len, past_len + t, device=input_ids.device)[None]
            longest = past_len + t if t else 0  # known here: no device sync, no graph break (train.compile)
        else:
            if position_ids is None:
                position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, past_len:]
            longest = int(position_ids.max()) + 1 if position_ids.numel() else 0  # left padding: no position
        if longest > self.config.n_positions:
            raise WarmstartError(
                f"{longest} tokens exceed the model's context of {self.config.n_positions}",
                "shorten the prompt or lower max_new_tokens",
            )
        x = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        mask = decoder_mask(t, attention_mask, past_len, dtype=x.dtype)
        present = []
        for i, block in enumerate(self.layers):
            x, kv = self.run_block(block, x, mask, past[i] if past else None, is_causal=past_len == 0)
            present.append(kv)
        return self.final_norm(x), present

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        h, weight, _ = self.linear_head(hidden)
        return h @ weight.T

    def linear_head(self, hidden: torch.Tensor) -> tuple:
        """(h, W, bias): the head is h @ W.T (the fused training loss, lm_loss.head_loss, takes these)."""
        return hidden, self.wte.weight, None


# Hugging Face GPT2Model names (GPT2LMHeadModel adds "transformer."). GPT-2's Conv1D stores (in, out): the
# TRANSPOSED weights are transposed on the way in and out.
HF_KEYS = [
    ("wte.weight", "wte.weight"),
    ("wpe.weight", "wpe.weight"),
    ("final_norm.weight", "ln_f.weight"),
    ("final_norm.bias", "ln_f.bias"),
    ("layers.{i}.norm1.weight", "h.{i}.ln_1.weight"),
    ("layers.{i}.norm1.bias", "h.{i}.ln_1.bias"),
    ("layers.{i}.attn.qkv.weight", "h.{i}.attn.c_attn.weight"),
    ("layers.{i}.attn.qkv.bias", "h.{i}.attn.c_attn.bias"),
    ("layers.{i}.attn.out.weight", "h.{i}.attn.c_proj.weight"),
    ("layers.{i}.attn.out.bias", "h.{i}.attn.c_proj.bias"),
    ("layers.{i}.norm2.weight", "h.{i}.ln_2.weight"),
    ("layers.{i}.norm2.bias", "h.{i}.ln_2.bias"),
    ("layers.{i}.mlp.up.weight", "h.{i}.mlp.c_fc.weight"),
    ("layers.{i}.mlp.up.bias", "h.{i}.mlp.c_fc.bias"),
    ("layers.{i}.mlp.down.weight", "h.{i}.mlp.c_proj.weight"),
    ("layers.{i}.mlp.down.bias", "h.{i}.mlp.c_proj.bias"),
]
HF_TRANSPOSED = ("attn.qkv.weight", "attn.out.weight", "mlp.up.weight", "mlp.down.weight")
