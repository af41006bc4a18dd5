"""The biLM's LSTMs vs torch's nn.LSTM of the same shape: seconds per training step (forward + backward), in
one process.

ELMo runs two LSTM stacks (a forward and a backward direction), each ``--layers`` LSTMs of ``cell_size``
cells projected to ``projection_dim`` (the shape of the preset ``elmo-SIZE``). The rows, all on the same
random batch (``--batch`` x ``--seq`` vectors of the projection width) and a loss summing every layer's
output of both directions:

- ``nn.LSTM(proj_size)``: per direction one ``torch.nn.LSTM(num_layers=layers, proj_size=...)``, torch's own
  kernel: the reference (1.0x);
- ``LstmStack, no clip``: warmstart's stacks (nn/lstm.py: residual connections; nn.LSTM layer by layer);
- ``LstmStack, clip 3, autograd loop``: the cell and projected states clipped at 3 (the original ELMo), the
  step loop under autograd (``clipped_lstm``, the implementation before nn/clipped_lstm.py);
- ``LstmStack, clip 3``: the same clipping through nn/clipped_lstm.py (the path the model takes).

Dropout is off everywhere (the reference has none between directions to compare with). Trials alternate
between the rows so that machine noise hits all of them; the median is reported, with its ratio to the
reference and whether the clipped biLM is within ``--target`` (1.3) times it. Prints a Markdown table and
one JSON line.

    python benchmarks/elmo_lstm.py                       # elmo-mini's shape, batch 32 x 64
    python benchmarks/elmo_lstm.py --size original       # 512 projected from 4096 cells, batch 16 x 20
    python benchmarks/elmo_lstm.py --size mini --device cuda --trials 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch import nn

from warmstart.config import load_preset
from warmstart.nn.lstm import LstmStack, clipped_lstm

SIZES = {"mini": (32, 64), "small": (32, 64), "medium": (16, 32), "original": (16, 20)}  # (batch, seq)
CLIP = 3.0


class AutogradLoop(LstmStack):
    """``LstmStack`` with clipping through the step loop under autograd (the old path)."""

    def layer(self, lstm: nn.LSTM, x: torch.Tensor) -> torch.Tensor:
        return clipped_lstm(lstm, x, *self.clips)


def reference(width: int, cells: int, layers: int) -> nn.Module:
    """Two directions of torch's multi-layer LSTM with a projection."""

    class TwoLstms(nn.Module):
        def __init__(self):
            super().__init__()
            self.fwd, self.bwd = (
                nn.LSTM(width, cells, layers, batch_first=True, proj_size=width) for _ in "fb"
            )

        def forward(self, x):
            return [self.fwd(x)[0], self.bwd(x)[0]]

    return TwoLstms()


def rows(width: int, cells: int, layers: int) -> dict[str, nn.Module]:
    def stacks(cls, clips):
        pair = nn.ModuleList(cls(width, cells, layers, 0.0, True, clips) for _ in "fb")
        return Both(pair)

    return {
        "nn.LSTM(proj_size)": reference(width, cells, layers),
        "LstmStack, no clip": stacks(LstmStack, (0.0, 0.0)),
        f"LstmStack, clip {CLIP:g}, autograd loop": stacks(AutogradLoop, (CLIP, CLIP)),
        f"LstmStack, clip {CLIP:g}": stacks(LstmStack, (CLIP, CLIP)),
    }


class Both(nn.Module):
    """Both directions' stacks on the same input: every layer's output of each."""

    def __init__(self, pair: nn.ModuleList):
        super().__init__()
        self.pair = pair

    def forward(self, x):
        return [y for stack in self.pair for y in stack(x)]


def step_seconds(model: nn.Module, x: torch.Tensor) -> float:
    """One forward + backward pass."""
    sync = torch.cuda.synchronize if x.device.type == "cuda" else (lambda: None)
    model.zero_grad(set_to_none=True)
    sync()
    start = time.perf_counter()
    loss = sum(y.float().pow(2).mean() for y in model(x))
    loss.backward()
    sync()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=list(SIZES), default="mini", help="the LSTM shape of preset elmo-SIZE")
    p.add_argument("--batch", type=int, help="sequences per batch (default: by size)")
    p.add_argument("--seq", type=int, help="tokens per sequence (default: by size)")
    p.add_argument("--layers", type=int, default=2, help="LSTM layers per direction")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--target", type=float, default=1.3, help="the clipped biLM's allowed ratio to nn.LSTM")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    a = p.parse_args()
    spec = load_preset(f"elmo-{a.size}")["model"]
    width, cells = spec["projection_dim"], spec["cell_size"]
    batch, seq = a.batch or SIZES[a.size][0], a.seq or SIZES[a.size][1]
    device = torch.device(a.device)
    torch.manual_seed(0)
    models = {name: m.to(device).train() for name, m in rows(width, cells, a.layers).items()}
    x = torch.randn(batch, seq, width, device=device, requires_grad=True)
    for model in models.values():  # warm-up: one short step each
        step_seconds(model, x[:, :4])
    times: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(a.trials):
        for name, model in models.items():
            times[name].append(step_seconds(model, x))
    medians = {name: statistics.median(v) for name, v in times.items()}
    ref = medians["nn.LSTM(proj_size)"]
    clipped = medians[f"LstmStack, clip {CLIP:g}"] / ref
    print(f"elmo-{a.size}: 2 directions x {a.layers} layers, {cells} cells projected to {width}, batch "
          f"{batch} x {seq}, {a.device}, {torch.get_num_threads()} threads,"
          f" median of {a.trials}")  # fmt: skip
    print("| row | ms per step (fwd + bwd) | x nn.LSTM |\n|---|---:|---:|")
    for name, v in medians.items():
        print(f"| {name} | {v * 1e3:,.1f} | {v / ref:.2f} |")
    within = "yes" if clipped <= a.target else "no"
    print(f"clipped biLM within {a.target:g}x of nn.LSTM: {within} ({clipped:.2f}x)")
    record = {"size": a.size, "device": a.device, "batch": batch, "seq": seq, "layers": a.layers,
              "cells": cells, "projection": width, "trials": a.trials, "threads": torch.get_num_threads(),
              "ms_per_step": {k: round(v * 1e3, 2) for k, v in medians.items()},
              "ratio": {k: round(v / ref, 3) for k, v in medians.items()},
              "target": a.target, "within_target": within == "yes"}  # fmt: skip
    print(json.dumps(record))


if __name__ == "__main__":
    main()
