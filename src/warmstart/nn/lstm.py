"""The LSTMs of a bidirectional language model (ELMo): per direction a stack of LSTMs with a projection
(LSTMP, ``torch.nn.LSTM(proj_size=...)``), a residual connection from the second layer on, dropout between
layers; the backward direction reads each sequence reversed (its real tokens only: right padding stays
behind them, so it never reaches a real position).

Cell and projection clipping (the original ELMo clips both at 3) need the cell state inside the loop, which
``nn.LSTM`` does not expose: with ``cell_clip`` or ``proj_clip`` set, the same weights run through a step
loop with its backward pass written by hand (nn/clipped_lstm.py). ``clipped_lstm`` here is that loop under
autograd, plain and slow: the reference the fast one is tested against (without clipping it computes what
``nn.LSTM`` does, tested)."""

from __future__ import annotations

import warnings

import torch
from torch import nn

from warmstart.nn.checkpointing import Checkpointing
from warmstart.nn.clipped_lstm import fast_clipped_lstm

# torch says once per process that its oneDNN kernels have no projection: true, and nothing a user can act on
warnings.filterwarnings("ignore", message="LSTM with projections is not supported with oneDNN")


def reverse(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row's first ``length`` positions reversed, the rest (padding) left where it is; its own
    inverse."""
    t = x.shape[1]
    pos = torch.arange(t, device=x.device)[None]
    idx = torch.where(pos < lengths[:, None], lengths[:, None] - 1 - pos, pos)
    return x.gather(1, idx[..., None].expand(-1, -1, x.shape[-1]))


def clipped_lstm(lstm: nn.LSTM, x: torch.Tensor, cell_clip: float, proj_clip: float) -> torch.Tensor:
    """``lstm(x)`` (one layer, batch first, with a projection), the cell state clipped to +-cell_clip and
    the projected state to +-proj_clip after every step (0: no clip); under autograd, step by step (the
    reference of ``fast_clipped_lstm``)."""
    w_ih, w_hh, w_hr = lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.weight_hr_l0
    bias = lstm.bias_ih_l0 + lstm.bias_hh_l0
    b, t, _ = x.shape
    h = x.new_zeros(b, w_hr.shape[0])
    c = x.new_zeros(b, w_hh.shape[0] // 4)
    inputs = x @ w_ih.T + bias
    out = []
    for step in range(t):
        i, f, g, o = (inputs[:, step] + h @ w_hh.T).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        if cell_clip:
            c = c.clamp(-cell_clip, cell_clip)
        h = (torch.sigmoid(o) * torch.tanh(c)) @ w_hr.T
        if proj_clip:
            h = h.clamp(-proj_clip, proj_clip)
        out.append(h)
    return torch.stack(out, 1)


class LstmStack(Checkpointing, nn.Module):
    """One direction: ``forward(x) -> [layer 1 output, ..., layer L output]``, each (B, T, width)."""

    def __init__(self, width: int, cells: int, layers: int, dropout: float, residual: bool, clips=(0, 0)):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.LSTM(width, cells, proj_size=width, batch_first=True) for _ in range(layers)
        )
        self.drop = nn.Dropout(dropout)
        self.residual, self.clips = residual, clips

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        outs = []
        for i, lstm in enumerate(self.layers):
            y = self.run_block(self.layer, lstm, x)
            if self.residual and i > 0:
                y = y + x
            outs.append(y)
            x = self.drop(y)
        return outs

    def layer(self, lstm: nn.LSTM, x: torch.Tensor) -> torch.Tensor:
        return fast_clipped_lstm(lstm, x, *self.clips) if any(self.clips) else lstm(x)[0]
