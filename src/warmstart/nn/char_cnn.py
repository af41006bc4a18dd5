"""ELMo's context-free token representation (Peters et al. 2018; Jozefowicz et al. 2016): each token's
characters (UTF-8 bytes, between begin- and end-of-word marks) are embedded, convolved with filters of
several widths, max-pooled over the word, passed through highway layers and projected to the biLM's width.

Character ids follow the original release: bytes 0-255, then begin-of-sentence 256, end-of-sentence 257,
begin-of-word 258, end-of-word 259, padding 260, each plus one (0 is the empty slot after the word): 262 ids.
"""

from __future__ import annotations

import torch
from torch import nn

CHARS = 262
BOS_CHAR, EOS_CHAR, BOW, EOW, PAD_CHAR = 256, 257, 258, 259, 260


def word_chars(word: str, width: int, role: str | None = None) -> list[int]:
    """The ``width`` character ids of one token (``role``: "bos"/"eos" for the sentence marks)."""
    if role == "bos":
        inner = [BOS_CHAR]
    elif role == "eos":
        inner = [EOS_CHAR]
    else:
        inner = list(word.encode("utf-8"))[: width - 2]
    ids = [BOW, *inner, EOW] + [PAD_CHAR] * (width - 2 - len(inner))
    return [i + 1 for i in ids]


class Highway(nn.Module):
    """y = g * x + (1 - g) * relu(W_h x), g = sigmoid(W_g x): one layer, AllenNLP's parameterisation (one
    linear map of width 2D, its second half the gate, gate bias started at 1 so the layer starts near x)."""

    def __init__(self, width: int, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, 2 * width) for _ in range(layers))
        for layer in self.layers:
            nn.init.zeros_(layer.bias)
            layer.bias.data[width:].fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            nonlinear, gate = layer(x).chunk(2, dim=-1)
            gate = torch.sigmoid(gate)
            x = gate * x + (1 - gate) * torch.relu(nonlinear)
        return x


class CharCNN(nn.Module):
    """(B, T, C) character ids -> (B, T, out) token vectors."""

    def __init__(self, filters: list[list[int]], char_dim: int, highway: int, out: int):
        super().__init__()
        self.embed = nn.Embedding(CHARS, char_dim)
        self.convs = nn.ModuleList(nn.Conv1d(char_dim, n, w) for w, n in filters)
        width = sum(n for _, n in filters)
        self.highway = Highway(width, highway)
        self.proj = nn.Linear(width, out)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        b, t, c = chars.shape
        x = self.embed(chars.reshape(b * t, c)).transpose(1, 2)  # (BT, char_dim, C)
        pooled = [torch.relu(conv(x).amax(-1)) for conv in self.convs]  # max over the word, then relu
        return self.proj(self.highway(torch.cat(pooled, -1))).reshape(b, t, -1)
