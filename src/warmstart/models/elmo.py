"""ELMo (Peters et al. 2018): a bidirectional LSTM language model whose layers, mixed, are contextual word
vectors. A context-free token layer (a character CNN over each word, nn/char_cnn.py, or, as an option, an
embedding per token of any warmstart tokenizer), then per direction a stack of LSTMs with projection and
residual connections (nn/lstm.py); the two directions share the token layer and the softmax and keep their
own LSTMs. Layer j of the biLM is [forward_j; backward_j] (the token layer: [x; x], as in the paper), so
every layer is 2 x projection_dim wide.

The character model reads whole words: its token ids index a table of each vocabulary word's characters
(a persistent buffer, built from the tokenizer by ``bind`` and saved with the weights), so it takes a word
tokenizer (`warmstart tokenizer train --kind word`). A word outside the vocabulary still reaches it as its
characters: the text's words are added to an open copy of the tokenizer before encoding, and ``read_words``
appends their characters (tokenization/open_words.py). Parameter counts of the presets, without the softmax
and with torch's second LSTM bias left out (AllenNLP's LSTM cell has one bias per gate), equal the counts
AllenNLP's ELMo page gives: small 13.6M, medium 28.0M, original 93.6M (tests/models/test_elmo.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.nn.char_cnn import CharCNN, word_chars
from warmstart.nn.checkpointing import Checkpointing
from warmstart.nn.lstm import LstmStack, reverse

ELMO_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
REPRESENTATIONS = ("chars", "embeddings")


@dataclass
class ElmoConfig:
    # static word vectors import as a zero-layer ELMo whose token layer is the vectors (hub/static_vectors.py)
    number_least: ClassVar[dict[str, int]] = {"num_layers": 0}

    vocab_size: int = opt(50000, "vocabulary size: the softmax's words (set from the tokenizer)")
    token_representation: str = opt(
        "chars", "chars (a character CNN over each word, as ELMo) or embeddings (a vector per token)"
    )
    max_characters_per_token: int = opt(50, "characters the CNN reads of a word, its two marks included")
    char_embedding_dim: int = opt(16, "width of a character's embedding")
    filters: list[list[int]] = opt(ELMO_FILTERS, "the CNN's [width, count] filter banks")
    n_highway: int = opt(2, "highway layers after the CNN")
    projection_dim: int = opt(512, "width of the token layer and of each LSTM's projected output")
    cell_size: int = opt(4096, "LSTM cell width")
    num_layers: int = opt(2, "LSTM layers per direction")
    residual: bool = opt(True, "residual connection around every LSTM layer after the first")
    cell_clip: float = opt(0.0, "clip the LSTM cell state to +-this after every step (0: off; ELMo: 3)")
    proj_clip: float = opt(0.0, "clip the projected LSTM state to +-this (0: off; ELMo: 3)")
    dropout: float = opt(0.1, "dropout on the token layer and between LSTM layers")

    model_type = "elmo"
    TINY = {
        "filters": [[1, 8], [2, 8], [3, 16]],
        "n_highway": 1,
        "projection_dim": 16,
        "cell_size": 32,
        "char_embedding_dim": 4,
    }

    def __post_init__(self):
        if self.token_representation not in REPRESENTATIONS:
            raise WarmstartError(
                f"model.token_representation is {self.token_representation!r}",
                f"use one of {', '.join(REPRESENTATIONS)}",
            )
        if self.max_characters_per_token < 3:
            raise WarmstartError("model.max_characters_per_token must be at least 3", "e.g. 50")

    @property
    def hidden_size(self) -> int:
        return 2 * self.projection_dim

    @property
    def num_hidden_layers(self) -> int:
        return self.num_layers


class ElmoModel(Checkpointing, nn.Module):  # Checkpointing: its LSTM stacks (nn/lstm.py) run it
    """``forward(input_ids, attention_mask=None)`` -> (B, T, 2P) top biLM layer; ``hidden_states`` -> every
    layer [token, lstm 1, ..., lstm L]; ``directions`` -> (token layer, forward states, backward states)."""

    generates = False
    decoder_only = False
    bos_first = False
    # finetuning (train/loop.py): the strategy a run takes unless told, and the line that says so
    default_strategy = (
        "frozen",
        "an ELMo run: strategy frozen (its biLM as features; --strategy full trains it too)",
    )

    def __init__(self, config: ElmoConfig):
        super().__init__()
        c = self.config = config
        p = c.projection_dim
        if c.token_representation == "chars":
            self.chars = CharCNN(c.filters, c.char_embedding_dim, c.n_highway, p)
            table = torch.zeros(c.vocab_size, c.max_characters_per_token, dtype=torch.int16)
            self.register_buffer("char_table", table)  # saved with the weights: the words the model read
            # words read since, beyond the vocabulary (tokenization/open_words.py): never saved
            extra = torch.zeros(0, c.max_characters_per_token, dtype=torch.int16)
            self.register_buffer("extra_chars", extra, persistent=False)
        else:
            self.embed = nn.Embedding(c.vocab_size, p)
            nn.init.normal_(self.embed.weight, std=0.02)
        clips = (c.cell_clip, c.proj_clip)
        self.forward_lm = LstmStack(p, c.cell_size, c.num_layers, c.dropout, c.residual, clips)
        self.backward_lm = LstmStack(p, c.cell_size, c.num_layers, c.dropout, c.residual, clips)
        self.softmax = nn.Linear(p, c.vocab_size, bias=False)  # shared by both directions
        nn.init.normal_(self.softmax.weight, std=p**-0.5)
        self.drop = nn.Dropout(c.dropout)

    @property
    def reads_characters(self) -> bool:
        return self.config.token_representation == "chars"

    @property
    def word_bytes(self) -> int:
        """The longest word (UTF-8 bytes) the character window holds, its two marks aside."""
        return self.config.max_characters_per_token - 2

    def bind(self, tokenizer) -> None:
        """Fill the character table from the tokenizer's words (the character model only)."""
        if not self.reads_characters:
            return
        if tokenizer.algorithm != "word":
            raise WarmstartError(
                f"the character model reads whole words; "
                f"a {tokenizer.algorithm} tokenizer cuts them into pieces",
                "train a word tokenizer (`warmstart tokenizer train --kind word`), or set "
                "model.token_representation=embeddings",
            )
        for i in range(self.config.vocab_size):
            word = tokenizer.id_to_token(i)
            if i not in (tokenizer.bos_id, tokenizer.eos_id) and len(word.encode("utf-8")) > self.word_bytes:
                raise WarmstartError(
                    f"the tokenizer's word {word[:40]!r} has {len(word.encode('utf-8'))} bytes, more than "
                    f"model.max_characters_per_token={self.config.max_characters_per_token} leaves (2 go to "
                    "the word's marks)",
                    "raise model.max_characters_per_token, or retrain the word tokenizer (it keeps words "
                    "of up to 48 bytes)",
                )
        self.char_table.copy_(self._rows(tokenizer, range(self.config.vocab_size)))

    def read_words(self, tokenizer) -> None:
        """Learn the characters of the words an open copy of the tokenizer added after the vocabulary."""
        have = self.config.vocab_size + len(self.extra_chars)
        if tokenizer.vocab_size > have:
            rows = self._rows(tokenizer, range(have, tokenizer.vocab_size)).to(self.char_table.device)
            self.extra_chars = torch.cat([self.extra_chars, rows])

    def _rows(self, tokenizer, ids) -> torch.Tensor:
        width, rows = self.config.max_characters_per_token, []
        for i in ids:
            role = "bos" if i == tokenizer.bos_id else "eos" if i == tokenizer.eos_id else None
            rows.append(word_chars(tokenizer.id_to_token(i), width, role))
        return torch.tensor(rows, dtype=torch.int16).reshape(-1, width)

    @property
    def word_embeddings(self) -> nn.Embedding:
        if not hasattr(self, "embed"):
            raise WarmstartError(
                "the character model has no token embeddings to warm-start",
                "set model.token_representation=embeddings, or drop embeddings.vectors",
            )
        return self.embed

    def token_layer(self, input_ids: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "chars"):
            table = self.char_table
            if len(self.extra_chars):
                table = torch.cat([table, self.extra_chars])
            return self.chars(table[input_ids].long())
        return self.embed(input_ids)

    def directions(self, input_ids, attention_mask=None):
        """(token layer, [forward layer 1..L], [backward layer 1..L]), each (B, T, P); position t of the
        forward states has read tokens 0..t, of the backward states tokens t..end."""
        x = self.token_layer(input_ids)
        t = input_ids.shape[1]
        if attention_mask is None:
            lengths = torch.full((input_ids.shape[0],), t, device=input_ids.device)
        else:
            lengths = attention_mask.long().sum(1)
        dropped = self.drop(x)
        forward = self.forward_lm(dropped)
        backward = [reverse(h, lengths) for h in self.backward_lm(reverse(dropped, lengths))]
        return x, forward, backward

    def hidden_states(self, input_ids, attention_mask=None, token_type_ids=None) -> list[torch.Tensor]:
        x, forward, backward = self.directions(input_ids, attention_mask)
        return [torch.cat([x, x], -1)] + [torch.cat(pair, -1) for pair in zip(forward, backward)]

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> torch.Tensor:
        return self.hidden_states(input_ids, attention_mask)[-1]

    def linear_head(self, hidden: torch.Tensor) -> tuple:
        """(h, W, None): the softmax is h @ W.T (lm_loss.head_loss's fused path takes these)."""
        return hidden, self.softmax.weight, None

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.softmax(hidden)

    def task_encoder(self) -> nn.Module:
        """What a finetuned task builds on: this biLM, its layers mixed, a task biLSTM (elmo_task.py)."""
        from warmstart.models.elmo_task import ElmoTaskEncoder  # it builds on this module

        return ElmoTaskEncoder(self)
