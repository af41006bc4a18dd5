"""BERT-style encoder: token + learned position + segment embeddings, post-LN (BERT) or pre-LN blocks.

The model maps token ids (and padding/segment ids) to hidden states; heads live with objectives and tasks.
Config field names follow Hugging Face's BertConfig so a checkpoint's config.json reads in both worlds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.nn.attention import SelfAttention, padding_mask
from warmstart.nn.checkpointing import Checkpointing
from warmstart.nn.disentangled import DisentangledSelfAttention, RelativeEmbeddings
from warmstart.nn.dropout import Dropout
from warmstart.nn.init import init_weights, sinusoidal_
from warmstart.nn.mlp import MLP


@dataclass
class BertConfig:
    vocab_size: int = opt(30522, "vocabulary size (set from the tokenizer when one is given)")
    hidden_size: int = opt(768, "width of the hidden states")
    num_hidden_layers: int = opt(12, "number of transformer blocks")
    num_attention_heads: int = opt(12, "attention heads per block")
    intermediate_size: int = opt(3072, "width of the feed-forward layer")
    max_position_embeddings: int = opt(512, "longest sequence the learned positions cover")
    type_vocab_size: int = opt(2, "number of segment (token type) ids")
    hidden_act: str = opt("gelu", "feed-forward activation: gelu, gelu_new, relu, silu")
    hidden_dropout_prob: float = opt(0.1, "dropout on embeddings and block outputs")
    attention_probs_dropout_prob: float = opt(0.1, "dropout on attention probabilities")
    layer_norm_eps: float = opt(1e-12, "LayerNorm epsilon")
    initializer_range: float = opt(0.02, "std of the normal initialisation")
    pre_ln: bool = opt(False, "pre-LN blocks (LayerNorm before attention/MLP) instead of BERT's post-LN")
    position_init: str = opt(
        "normal", "starting position embeddings: normal (BERT) or sinusoidal (scaled to initializer_range)"
    )
    pooler: bool = opt(True, "include BERT's pooler (dense + tanh on [CLS]) used by NSP and classification")
    embedding_size: int | None = opt(
        None, "width of the embeddings when it differs from hidden_size (ALBERT, ELECTRA): vocab -> E -> H"
    )
    share_layers: bool = opt(False, "ALBERT: all blocks share one set of weights (num_hidden_layers passes)")
    relative_attention: bool = opt(
        False, "DeBERTa's disentangled attention: content-content, content-position, position-content terms"
    )
    position_buckets: int = opt(256, "relative attention: log buckets of the relative distance (each sign)")
    max_relative_positions: int = opt(512, "relative attention: the distance the buckets stretch to")
    position_biased_input: bool = opt(True, "add absolute position embeddings to the input (DeBERTa: false)")

    model_type = "bert"

    @property
    def max_length(self) -> int:
        return self.max_position_embeddings


def embedding_width(c: BertConfig) -> int:
    return c.embedding_size or c.hidden_size


class BertEmbeddings(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        e = embedding_width(c)
        self.word = nn.Embedding(c.vocab_size, e)
        self.position = nn.Embedding(c.max_position_embeddings, e)
        self.token_type = nn.Embedding(c.type_vocab_size, e)
        self.norm = nn.LayerNorm(e, eps=c.layer_norm_eps)
        self.drop = Dropout(c.hidden_dropout_prob)
        self.absolute = c.position_biased_input
        self.perturb = None  # a hook set by a training regulariser (SiFT: objectives/sift.py), see below

    def forward(self, input_ids, token_type_ids=None):
        """The summed embeddings, LayerNormed. With a ``perturb`` hook (normalised embeddings -> a
        perturbation), the sum is standardised first (LayerNorm without its scale and shift), the hook's
        perturbation added, and the result LayerNormed: a perturbation whose size is relative to the
        embeddings' own, whatever their scale (He et al. 2021's scale-invariant perturbation)."""
        t = input_ids.shape[1]
        x = self.word(input_ids)
        if self.absolute:
            x = x + self.position.weight[:t]
        if token_type_ids is not None and self.token_type.num_embeddings > 1:
            x = x + self.token_type(token_type_ids)
        else:  # no segment ids, or a model without segments (RoBERTa: type_vocab_size 1)
            x = x + self.token_type.weight[0]
        if self.perturb is not None:
            z = F.layer_norm(x, x.shape[-1:], eps=self.norm.eps)
            x = z + self.perturb(z)
        return self.drop(self.norm(x))


class BertLayer(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.pre_ln = c.pre_ln
        if c.relative_attention:
            self.attn = DisentangledSelfAttention(
                c.hidden_size,
                c.num_attention_heads,
                c.attention_probs_dropout_prob,
                c.position_buckets,
                c.max_relative_positions,
                rel_dropout=c.hidden_dropout_prob,
            )
        else:
            self.attn = SelfAttention(c.hidden_size, c.num_attention_heads, c.attention_probs_dropout_prob)
        self.relative = c.relative_attention
        self.attn_drop = Dropout(c.hidden_dropout_prob)
        self.norm1 = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.mlp = MLP(c.hidden_size, c.intermediate_size, c.hidden_act, c.hidden_dropout_prob)
        self.norm2 = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def attend(self, x, mask, rel, query=None):
        if query is not None:
            return self.attn(x, mask, rel, query) if self.relative else self.attn(x, mask, query)
        return self.attn(x, mask, rel) if self.relative else self.attn(x, mask)

    def forward(self, x, mask=None, rel=None, query=None):
        """``rel``: the encoder's relative position table (DeBERTa attention only). ``query``: states the
        attention's queries and the residual read instead of ``x`` (keys and values still come from ``x``):
        DeBERTa's enhanced mask decoder; the output is then one per query."""
        if query is not None:
            return self.requery(x, mask, rel, query)
        if self.pre_ln:
            x = x + self.attn_drop(self.attend(self.norm1(x), mask, rel))
            return x + self.mlp(self.norm2(x))
        x = self.norm1(x + self.attn_drop(self.attend(x, mask, rel)))
        return self.norm2(x + self.mlp(x))

    def requery(self, x, mask, rel, query):
        if self.pre_ln:
            q = query + self.attn_drop(self.attend(self.norm1(x), mask, rel, self.norm1(query)))
            return q + self.mlp(self.norm2(q))
        q = self.norm1(query + self.attn_drop(self.attend(x, mask, rel, query)))
        return self.norm2(q + self.mlp(q))


class BertModel(Checkpointing, nn.Module):
    """Encoder: ``forward(input_ids, attention_mask=None, token_type_ids=None)`` -> (B, T, H) states.

    ``shared_embeddings``: use another encoder's embedding module instead of owning one (ELECTRA's generator
    reads the discriminator's); it is then not part of this module's parameters or state dict.
    """

    # capabilities (what callers ask instead of testing the family's name)
    generates = False  # has lm_logits: writes text
    decoder_only = False  # one causal stack: a prompt continues, no encoder
    bos_first = False  # texts start with <s> (BART)

    def __init__(self, config: BertConfig, shared_embeddings: BertEmbeddings | None = None):
        super().__init__()
        if config.hidden_size % config.num_attention_heads:
            raise WarmstartError(
                f"model.hidden_size {config.hidden_size} is not divisible by "
                f"model.num_attention_heads {config.num_attention_heads}",
                "choose a head count that divides the hidden size",
            )
        self.config = config
        self.embeddings = BertEmbeddings(config) if shared_embeddings is None else None
        self.shared = [shared_embeddings]  # a list keeps a shared module out of this one's parameters
        e = embedding_width(config)
        self.embed_project = nn.Linear(e, config.hidden_size) if e != config.hidden_size else None
        self.rel = (
            RelativeEmbeddings(config.position_buckets, config.hidden_size, config.layer_norm_eps)
            if config.relative_attention
            else None
        )
        blocks = 1 if config.share_layers else config.num_hidden_layers
        self.layers = nn.ModuleList(BertLayer(config) for _ in range(blocks))
        self.final_norm = (
            nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if config.pre_ln else None
        )
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size) if config.pooler else None
        init_weights(self, config.initializer_range)
        if config.position_init not in ("normal", "sinusoidal"):
            raise WarmstartError(
                f"unknown model.position_init '{config.position_init}'", "use normal or sinusoidal"
            )
        if config.position_init == "sinusoidal" and self.embeddings is not None:  # shared: the owner's
            sinusoidal_(self.embeddings.position.weight, config.initializer_range)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> torch.Tensor:
        return self.hidden_states(input_ids, attention_mask, token_type_ids, keep=False)[-1]

    def hidden_states(
        self, input_ids, attention_mask=None, token_type_ids=None, keep=True, layers: int | None = None
    ) -> list:
        """[embedding output, layer 1, ..., layer L] (the last after the final norm in pre-LN models);
        with ``keep=False`` only the last; ``layers``: run only the first that many blocks."""
        t = input_ids.shape[1]
        if t > self.config.max_position_embeddings and self.config.position_biased_input:
            raise ValueError(f"sequence length {t} exceeds max_position_embeddings")
        x = self.embedding_module(input_ids, token_type_ids)
        if self.embed_project is not None:
            x = self.embed_project(x)
        states = [x] if keep else []
        mask = padding_mask(attention_mask)
        rel = self.rel() if self.rel is not None else None  # one normed table for all layers
        n = self.config.num_hidden_layers
        for i in range(n if layers is None else layers):
            x = self.run_block(self.block(i), x, mask, rel)
            if self.final_norm is not None and i == n - 1:
                x = self.final_norm(x)
            if keep:
                states.append(x)
        return states if keep else [x]

    def pool(self, hidden: torch.Tensor, attention_mask=None) -> torch.Tensor:
        """BERT's pooled output: tanh(dense([CLS])); the raw [CLS] state when the model has no pooler
        (``attention_mask`` is not needed: [CLS] comes first)."""
        cls = hidden[:, 0]
        return torch.tanh(self.pooler(cls)) if self.pooler is not None else cls

    def positions(self, t: int) -> torch.Tensor:
        """The absolute position embeddings of positions 0 .. t-1, (t, hidden): the table a DeBERTa-style
        input (``position_biased_input=false``) leaves unread, which its enhanced mask decoder adds."""
        if embedding_width(self.config) != self.config.hidden_size:
            raise ValueError("the position embeddings are narrower than the hidden states (embedding_size)")
        if t > self.config.max_position_embeddings:
            raise ValueError(f"sequence length {t} exceeds max_position_embeddings")
        return self.embedding_module.position.weight[:t]

    def requery(self, hidden, query, attention_mask=None, passes: int = 1) -> torch.Tensor:
        """The last block run ``passes`` times more with its keys and values from ``hidden`` (the states that
        entered it) and its queries from ``query``, then from each pass's output; the final norm after the
        last pass in pre-LN models. DeBERTa's enhanced mask decoder (objectives/emd.py) is built on it."""
        mask = padding_mask(attention_mask)
        rel = self.rel() if self.rel is not None else None
        top = self.block(self.config.num_hidden_layers - 1)
        for _ in range(passes):
            query = top(hidden, mask, rel, query=query)
        return self.final_norm(query) if self.final_norm is not None else query

    @property
    def embedding_module(self) -> BertEmbeddings:
        """The embeddings this encoder reads: its own, or the shared ones."""
        return self.embeddings if self.embeddings is not None else self.shared[0]

    @property
    def word_embeddings(self) -> nn.Embedding:
        return self.embedding_module.word

    def block(self, i: int) -> nn.Module:
        """The weights block ``i`` runs with (the one shared block when layers are shared)."""
        return self.layers[0 if self.config.share_layers else i]


# Hugging Face BertModel names (BertForMaskedLM adds the prefix "bert.").
HF_KEYS = [
    ("embeddings.word.weight", "embeddings.word_embeddings.weight"),
    ("embeddings.position.weight", "embeddings.position_embeddings.weight"),
    ("embeddings.token_type.weight", "embeddings.token_type_embeddings.weight"),
    ("embeddings.norm.weight", "embeddings.LayerNorm.weight"),
    ("embeddings.norm.bias", "embeddings.LayerNorm.bias"),
    ("layers.{i}.attn.out.weight", "encoder.layer.{i}.attention.output.dense.weight"),
    ("layers.{i}.attn.out.bias", "encoder.layer.{i}.attention.output.dense.bias"),
    ("layers.{i}.norm1.weight", "encoder.layer.{i}.attention.output.LayerNorm.weight"),
    ("layers.{i}.norm1.bias", "encoder.layer.{i}.attention.output.LayerNorm.bias"),
    ("layers.{i}.mlp.up.weight", "encoder.layer.{i}.intermediate.dense.weight"),
    ("layers.{i}.mlp.up.bias", "encoder.layer.{i}.intermediate.dense.bias"),
    ("layers.{i}.mlp.down.weight", "encoder.layer.{i}.output.dense.weight"),
    ("layers.{i}.mlp.down.bias", "encoder.layer.{i}.output.dense.bias"),
    ("layers.{i}.norm2.weight", "encoder.layer.{i}.output.LayerNorm.weight"),
    ("layers.{i}.norm2.bias", "encoder.layer.{i}.output.LayerNorm.bias"),
]
HF_POOLER_KEYS = [("pooler.weight", "pooler.dense.weight"), ("pooler.bias", "pooler.dense.bias")]
HF_FUSED = [
    (
        "layers.{i}.attn.qkv.weight",
        [f"encoder.layer.{{i}}.attention.self.{p}.weight" for p in ("query", "key", "value")],
    ),
    (
        "layers.{i}.attn.qkv.bias",
        [f"encoder.layer.{{i}}.attention.self.{p}.bias" for p in ("query", "key", "value")],
    ),
]
