"""ELMo as the lectures use it downstream: the biLM kept frozen, its layers mixed with weights the task
learns (nn/scalar_mix.py), and a small task encoder over the mixed vectors (a one-layer biLSTM, as the
ELMo paper's task models), under the task's head. Every task takes this in place of a transformer encoder:
``forward(input_ids, attention_mask, token_type_ids)`` -> (B, T, hidden_size) states, ``config`` with the
names the heads read.

Strategies: ``frozen`` (the default for an ELMo run) trains the mix, the task biLSTM and the head;
``full`` also trains the biLM. ``TASK_PARAMETERS`` names what trains under ``frozen``; ``learned`` reports
the mix the task chose."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from warmstart.models.elmo import ElmoConfig, ElmoModel
from warmstart.nn.scalar_mix import ScalarMix


@dataclasses.dataclass
class ElmoTaskConfig:
    """What a task head reads of its encoder (BERT's names)."""

    hidden_size: int
    hidden_dropout_prob: float
    initializer_range: float
    model_type: str = "elmo"


class ElmoTaskEncoder(nn.Module):
    TASK_PARAMETERS = ("mix.", "task_lstm.")

    def __init__(self, bilm: ElmoModel, task_lstm: bool = True):
        super().__init__()
        c: ElmoConfig = bilm.config
        self.bilm = bilm
        self.mix = ScalarMix(c.num_layers + 1)
        width = c.hidden_size  # 2 x projection
        self.task_lstm = (
            nn.LSTM(width, width // 2, batch_first=True, bidirectional=True) if task_lstm else None
        )
        self.config = ElmoTaskConfig(width, c.dropout, 0.02)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> torch.Tensor:
        states = self.bilm.hidden_states(input_ids, attention_mask)
        x = self.drop(self.mix(states))
        if self.task_lstm is None:
            return x
        if attention_mask is None:
            return self.task_lstm(x)[0]
        lengths = attention_mask.long().sum(1)  # the backward half reads the real tokens only
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu().clamp(min=1), True, enforce_sorted=False)
        out, _ = self.task_lstm(packed)
        return nn.utils.rnn.pad_packed_sequence(out, True, total_length=x.shape[1])[0]

    def hidden_states(self, input_ids, attention_mask=None, token_type_ids=None) -> list[torch.Tensor]:
        return self.bilm.hidden_states(input_ids, attention_mask)

    def learned(self) -> tuple[dict, str]:
        """What the task learned of the biLM (``learned``: train/loop.py): its layer mix."""
        mix = self.mix.weights()
        names = ["token layer"] + [f"lstm {i}" for i in range(1, len(self.mix.scalars))]
        shown = ", ".join(f"{name} {w:.3f}" for name, w in zip(names, mix["weights"]))
        return {"layer_mix": mix}, f"layer mix of the best model: {shown}, gamma {mix['gamma']:.3f}"
