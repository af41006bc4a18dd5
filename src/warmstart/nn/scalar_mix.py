"""ELMo's task-specific layer mix (Peters et al. 2018, eq. 1): gamma * sum_j softmax(s)_j * h_j over the
biLM's layers (the token layer and every LSTM layer), with s and gamma learned by the task. The weights
start equal (s = 0) and gamma at 1."""

from __future__ import annotations

import torch
from torch import nn


class ScalarMix(nn.Module):
    def __init__(self, layers: int):
        super().__init__()
        self.scalars = nn.Parameter(torch.zeros(layers))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, states: list[torch.Tensor]) -> torch.Tensor:
        weights = torch.softmax(self.scalars, 0)
        return self.gamma * sum(w * h for w, h in zip(weights, states))

    def weights(self) -> dict:
        """{"weights": [softmax(s)_j per layer], "gamma": gamma}: which layers the task chose."""
        return {"weights": [round(float(w), 4) for w in torch.softmax(self.scalars.detach(), 0)],
                "gamma": round(float(self.gamma.detach()), 4)}  # fmt: skip
