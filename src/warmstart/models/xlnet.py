"""XLNet (Yang et al. 2019): a post-LN stack of two-stream relative attention (warmstart.nn.two_stream) and
feed-forward layers over token embeddings only (no position table: positions enter as relative sinusoids in
every layer), with Transformer-XL's segment memory. The output layer is tied to the token embedding.

``forward(input_ids, attention_mask=None, token_type_ids=None)`` -> (B, T, H) content-stream states, what
tasks read. ``streams(...)`` also runs the query stream the permutation LM trains (``perm_mask``,
``target_mapping``, with transformers' meaning) and returns the memories for a next segment.

Config field names follow Hugging Face's XLNetConfig, the model's tensors keep its layout (``HF_KEYS``);
module names are warmstart's where its machinery reads them: ``layers`` (finetuning strategies, layer-wise
LR), ``embeddings.`` (frozen by top-k), ``ff.up`` / ``ff.down`` (LoRA targets).

Differences from transformers, none in eval mode: dropout on the relative position encodings draws one mask
for the batch (transformers one per row: a batch-sized copy of the encodings and of their projection); the
query stream attends only at the targets' positions (transformers: at every position, then picks them), so
``target_mapping`` rows must be one-hot or zero, one target per position (what the objective writes). The
output bias (transformers' lm_loss.bias) is a buffer here, so the model's parameters stay those of
transformers' XLNetModel; the permutation LM (objectives/plm.py) makes it a parameter and trains it, as
XLNetLMHeadModel does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.nn.checkpointing import Checkpointing
from warmstart.nn.dropout import Dropout
from warmstart.nn.init import init_weights
from warmstart.nn.mlp import ACTIVATIONS, activation
from warmstart.nn.pooling import last_real
from warmstart.nn.two_stream import Layout, TwoStreamAttention, relative_positions


@dataclass
class XLNetConfig:
    vocab_size: int = opt(32000, "vocabulary size (set from the tokenizer when one is given)")
    d_model: int = opt(768, "width of the hidden states")
    n_layer: int = opt(12, "number of layers")
    n_head: int = opt(12, "attention heads per layer (each d_model / n_head wide)")
    d_inner: int = opt(3072, "width of the feed-forward layer")
    ff_activation: str = opt("gelu", "feed-forward activation: gelu, gelu_new, relu, silu")
    attn_type: str = opt("bi", "bi: XLNet's attention over the whole text; uni: Transformer-XL's causal one")
    bi_data: bool = opt(False, "the second half of each batch reads relative positions backwards (XLNet's "
                        "pretraining pipeline; batches must be even)")  # fmt: skip
    clamp_len: int = opt(-1, "relative distances beyond this share one encoding (-1: no clamping)")
    same_length: bool = opt(False, "attn_type uni: every token sees as many keys (memory included)")
    mem_len: int | None = opt(None, "states a segment passes to the next (None: all, with those it got)")
    reuse_len: int | None = opt(None, "tokens opening a segment whose states become memory (None: all)")
    dropout: float = opt(0.1, "dropout on embeddings, positions, attention, sub-layer outputs and the output")
    layer_norm_eps: float = opt(1e-12, "LayerNorm epsilon")
    initializer_range: float = opt(0.02, "std of the normal initialisation")
    max_length: int = opt(512, "longest input the data and tasks may produce (XLNet has no position table)")
    pooler: bool = opt(False, "a summary tanh(dense(last real token)), transformers' sequence_summary (an "
                       "imported XLNetForSequenceClassification's; task.pooling=pooler reads)")  # fmt: skip

    model_type = "xlnet"
    TINY = {"d_inner": 64}  # warmstart.models.tiny has no rule for the name d_inner

    @property
    def hidden_size(self) -> int:
        return self.d_model

    @property
    def num_hidden_layers(self) -> int:
        return self.n_layer

    @property
    def hidden_dropout_prob(self) -> float:
        """The dropout a task head puts before its classifier (transformers' summary_last_dropout)."""
        return self.dropout

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head


@dataclass
class Streams:
    """``content`` (B, T, H); ``query`` (B, P, H), one row per ``target_mapping`` row, or None without
    targets; ``mems`` one (B, M', H) tensor per layer, detached: each layer's input states (the first
    ``reuse_len``, behind the memory it read, the last ``mem_len`` kept): the next segment's ``mems``."""

    content: torch.Tensor
    query: torch.Tensor | None
    mems: list


class Embeddings(nn.Module):
    """The token table (transformers' word_embedding) and the query stream's start (mask_emb, (1, 1, H))."""

    def __init__(self, vocab_size: int, width: int):
        super().__init__()
        self.word = nn.Embedding(vocab_size, width)
        self.mask = nn.Parameter(torch.empty(1, 1, width))


class FeedForward(nn.Module):
    """Post-LN: norm(x + dropout(down(dropout(act(up(x))))))."""

    def __init__(self, c: XLNetConfig):
        super().__init__()
        self.up, self.down = nn.Linear(c.d_model, c.d_inner), nn.Linear(c.d_inner, c.d_model)
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.act, self.drop = activation(c.ff_activation), Dropout(c.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.drop(self.down(self.drop(self.act(self.up(x))))))


class XLNetLayer(nn.Module):
    def __init__(self, c: XLNetConfig):
        super().__init__()
        self.attn = TwoStreamAttention(c.d_model, c.n_head, c.dropout, c.layer_norm_eps)
        self.ff = FeedForward(c)

    def forward(self, h, g, r, layout: Layout, memory=None):
        h, g = self.attn(h, g, r, layout, memory)
        return self.ff(h), None if g is None else self.ff(g)


def _check(c: XLNetConfig) -> None:
    if c.d_model % c.n_head:
        raise WarmstartError(
            f"model.d_model {c.d_model} is not divisible by model.n_head {c.n_head}",
            "choose a head count that divides the width",
        )
    if c.attn_type not in ("bi", "uni"):
        raise WarmstartError(f"unknown model.attn_type '{c.attn_type}'", "use bi (XLNet) or uni")
    if c.ff_activation not in ACTIVATIONS:
        raise WarmstartError(
            f"unknown model.ff_activation '{c.ff_activation}'", f"use one of {', '.join(sorted(ACTIVATIONS))}"
        )


class XLNetModel(Checkpointing, nn.Module):
    """``forward(input_ids, attention_mask=None, token_type_ids=None)`` -> (B, T, H) content-stream states;
    ``streams(...)`` -> Streams (both streams and the memories); ``lm_logits(hidden)`` -> (B, L, V)."""

    # capabilities (what callers ask instead of testing the family's name)
    generates = False  # has lm_logits: writes text
    decoder_only = False  # one causal stack: a prompt continues, no encoder
    bos_first = False  # texts start with <s> (BART)
    cls_at_end = True  # the class token closes the text: a text's summary is its last real token

    def __init__(self, config: XLNetConfig):
        super().__init__()
        _check(config)
        c = self.config = config
        self.embeddings = Embeddings(c.vocab_size, c.d_model)
        self.layers = nn.ModuleList(XLNetLayer(c) for _ in range(c.n_layer))
        self.drop = Dropout(c.dropout)
        # transformers' lm_loss.bias: an encoder buffer, trained by the permutation LM (module docstring)
        self.register_buffer("lm_bias", torch.zeros(c.vocab_size), persistent=True)
        self.pooler = nn.Linear(c.d_model, c.d_model) if c.pooler else None
        init_weights(self, c.initializer_range)
        nn.init.normal_(self.embeddings.mask, std=c.initializer_range)
        for layer in self.layers:
            layer.attn.reset_parameters(c.initializer_range)

    @property
    def word_embeddings(self) -> nn.Embedding:
        return self.embeddings.word

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> torch.Tensor:
        return self.streams(input_ids, attention_mask, token_type_ids).content

    def streams(self, input_ids, attention_mask=None, token_type_ids=None, perm_mask=None,
                target_mapping=None, mems=None) -> Streams:  # fmt: skip
        """Both streams. ``attention_mask`` (B, T) 1 for real tokens; ``token_type_ids`` (B, T) segment
        ids (only sameness counts); ``perm_mask`` (B, T, T) 1 where token i may not see token j;
        ``target_mapping`` (B, P, T) one-hot rows picking each target's position (zero rows: unused);
        ``mems`` a list per layer of (B, M, H) states of the previous segment (``Streams.mems`` of its
        call), always visible."""
        states, g, new_mems = self._run(input_ids, attention_mask, token_type_ids, perm_mask, target_mapping,
                                        mems, keep=False)  # fmt: skip
        return Streams(self.drop(states[-1]), None if g is None else self.drop(g), new_mems)

    def pool(self, hidden: torch.Tensor, attention_mask=None) -> torch.Tensor:
        """The summary of each text: tanh(dense(last real token)) (transformers' sequence_summary), or the
        last real token's state itself when the model has no pooler."""
        mask = (
            torch.ones(hidden.shape[:2], device=hidden.device) if attention_mask is None else attention_mask
        )
        last = hidden[torch.arange(hidden.shape[0], device=hidden.device), last_real(mask)]
        return torch.tanh(self.pooler(last)) if self.pooler is not None else last

    def hidden_states(self, input_ids, attention_mask=None, token_type_ids=None) -> list:
        """[embedding output, layer 1, ..., layer L] content-stream states (embed, probe)."""
        return self._run(input_ids, attention_mask, token_type_ids, None, None, None, keep=True)[0]

    def _run(self, input_ids, attention_mask, token_type_ids, perm_mask, target_mapping, mems, keep: bool):
        b, t = input_ids.shape
        m = mems[0].shape[1] if mems else 0
        c = self.config
        if c.bi_data and b % 2:
            raise WarmstartError(f"model.bi_data needs an even batch, got {b} rows", "use an even batch size")
        layout = self._layout(b, t, m, attention_mask, token_type_ids, perm_mask, target_mapping)
        h = self.drop(self.embeddings.word(input_ids))
        g = None
        if target_mapping is not None:
            g = self.drop(self.embeddings.mask.expand(b, target_mapping.shape[1], -1))
        r = relative_positions(t, m + t, c.d_model, c.attn_type == "bi", c.bi_data, c.clamp_len, b, h.device)
        r = self.drop(r.to(h.dtype))
        states, new_mems = [h], []
        for i, layer in enumerate(self.layers):
            memory = mems[i] if mems else None
            new_mems.append(self._memory(h, memory))
            h, g = self.run_block(layer, h, g, r, layout, memory)
            states = [*states, h] if keep else [h]
        return states, g, new_mems

    def _memory(self, h: torch.Tensor, memory) -> torch.Tensor:
        """transformers' cache_mem: the first reuse_len states behind the memory, the last mem_len kept."""
        c = self.config
        if c.reuse_len:
            h = h[:, : c.reuse_len]
        if memory is not None:
            h = torch.cat([memory, h], dim=1)
        return (h[:, -c.mem_len :] if c.mem_len else h).detach()

    def _layout(self, b, t, m, attention_mask, token_type_ids, perm_mask, target_mapping) -> Layout:
        """What every layer reads besides the states (see warmstart.nn.two_stream.Layout)."""
        k, device = m + t, self.embeddings.word.weight.device
        rows, cols = torch.arange(t, device=device)[:, None], torch.arange(k, device=device)[None]
        unseen = None  # (1 or B, T or 1, K): True where a token may not see a key
        if self.config.attn_type == "uni":
            unseen = cols > rows + m  # the future; same_length: the keys before j = i too (M + 1 seen)
            unseen = (unseen | (cols < rows) if self.config.same_length else unseen)[None]
        if attention_mask is not None:
            unseen = _either(unseen, _after_memory(attention_mask == 0, m)[:, None])
        if perm_mask is not None:
            unseen = _either(unseen, _after_memory(perm_mask > 0, m))
        if unseen is not None:
            unseen = unseen.expand(b, t, k)
        layout = Layout(None if unseen is None else unseen & (cols != rows + m))  # a token sees itself
        if token_type_ids is not None:
            types = _after_memory(token_type_ids, m)
            layout.segments = token_type_ids[:, :, None] != types[:, None]
        if target_mapping is not None:
            self._targets(layout, target_mapping, unseen, t, k)
        return layout

    def _targets(self, layout: Layout, target_mapping: torch.Tensor, unseen, t: int, k: int) -> None:
        """The query stream's rows of ``layout``: each target's distances, mask and segments."""
        b, p, _ = target_mapping.shape
        pos = target_mapping.argmax(-1)  # (B, P) each target's position
        layout.weight = target_mapping.sum(-1)[:, None, :, None]
        # the distance i + M - j of (target at i, key j) is entry T - i + j of relative_positions, whose
        # last entry (uni: distance 0) stands for the keys after i too: those are masked
        last = k + t - 1 if self.config.attn_type == "bi" else k
        layout.distance = ((t - pos)[..., None] + torch.arange(k, device=pos.device)).clamp(max=last)[:, None]
        rows = pos[..., None].expand(b, p, k)
        if unseen is not None:
            layout.query_mask = unseen.gather(1, rows)
        if layout.segments is not None:
            layout.query_segments = layout.segments.gather(1, rows)

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        h, weight, bias = self.linear_head(hidden)
        return h @ weight.T + bias

    def linear_head(self, hidden: torch.Tensor) -> tuple:
        """(h, W, bias): the head is h @ W.T + bias (the fused training loss, lm_loss.head_loss, takes
        these)."""
        return hidden, self.embeddings.word.weight, self.lm_bias


def _after_memory(x: torch.Tensor, m: int) -> torch.Tensor:
    """(B, ..., T) -> (B, ..., M + T), zeros (False) for the memory in front: always seen, segment 0."""
    return torch.cat([x.new_zeros(*x.shape[:-1], m), x], dim=-1) if m else x


def _either(a, b):
    return b if a is None else a | b


# Hugging Face XLNetModel names (XLNetLMHeadModel adds "transformer."); same shapes, no fused tensors.
_ATTN = ("q", "k", "v", "o", "r", "r_r_bias", "r_s_bias", "r_w_bias", "seg_embed")
_NORMS = [("attn.norm", "rel_attn.layer_norm"), ("ff.up", "ff.layer_1"), ("ff.down", "ff.layer_2"),
          ("ff.norm", "ff.layer_norm")]  # fmt: skip
HF_KEYS = [
    ("embeddings.word.weight", "word_embedding.weight"),
    ("embeddings.mask", "mask_emb"),
    *((f"layers.{{i}}.attn.{n}", f"layer.{{i}}.rel_attn.{n}") for n in _ATTN),
    *((f"layers.{{i}}.{o}.{p}", f"layer.{{i}}.{t}.{p}") for o, t in _NORMS for p in ("weight", "bias")),
]
