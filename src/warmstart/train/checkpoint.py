"""Checkpoints: directories written atomically, holding weights and trainer state without pickling.

Layout of ``RUN/checkpoints/step-00000100/``::

    config.json            model config (Hugging Face field names) + a "warmstart" block
    model.safetensors      the training unit's weights (encoder + heads)
    tokenizer.json, tokenizer_config.json, special_tokens_map.json
    trainer/state.json     step, best metric, data position, python RNG
    trainer/optimizer.safetensors + optimizer.json   AdamW moments and param groups
    trainer/rng.safetensors                          torch / numpy / CUDA RNG states

A checkpoint is written to a hidden temp directory and renamed into place, so a crash never leaves a
half-written checkpoint where resume would look. The last ``keep_last`` step directories are kept;
``RUN/best/`` holds the model with the best validation metric and ``RUN/final/`` the final model.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

STEP_DIR = re.compile(r"^step-(\d{8})$")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_dir(final: Path, write) -> Path:
    """Call ``write(tmp_dir)`` then rename tmp_dir to ``final`` (replacing an older one only at the end)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        write(tmp)
        for f in tmp.rglob("*"):
            if f.is_file():
                with open(f, "rb+") as fh:
                    os.fsync(fh.fileno())
        if final.exists():
            old = final.parent / f".old-{final.name}-{os.getpid()}"
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old)
        else:
            os.rename(tmp, final)
        _fsync_dir(final.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def save_weights(module: torch.nn.Module, path: Path) -> None:
    state = {k: v.detach().contiguous().cpu() for k, v in module.state_dict().items()}
    save_file(state, str(path), metadata={"format": "pt"})


def load_weights(module: torch.nn.Module, path: Path, strict: bool = True) -> tuple[list, list]:
    missing, unexpected = module.load_state_dict(load_file(str(path)), strict=strict)
    return missing, unexpected


def optimizer_state(opt: torch.optim.Optimizer) -> tuple[dict, dict]:
    sd = opt.state_dict()
    tensors = {}
    for idx, st in sd["state"].items():
        for name, value in st.items():
            t = value if torch.is_tensor(value) else torch.tensor(value)
            tensors[f"{idx}.{name}"] = t.detach().contiguous().cpu()
    return tensors, {"param_groups": sd["param_groups"]}


def load_optimizer_state(opt: torch.optim.Optimizer, tensors: dict, meta: dict) -> None:
    state: dict = {}
    for key, t in tensors.items():
        idx, name = key.split(".", 1)
        state.setdefault(int(idx), {})[name] = t
    opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def rng_state() -> tuple[dict, dict]:
    np_state = np.random.get_state()
    tensors = {"torch": torch.get_rng_state(), "numpy_keys": torch.from_numpy(np_state[1].astype(np.int64))}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"cuda.{i}"] = s
    meta = {"numpy": [np_state[0], int(np_state[2]), int(np_state[3]), float(np_state[4])]}
    meta["python"] = [random.getstate()[0], list(random.getstate()[1]), random.getstate()[2]]
    return tensors, meta


def set_rng_state(tensors: dict, meta: dict) -> None:
    torch.set_rng_state(tensors["torch"])
    kind, pos, has_gauss, gauss = meta["numpy"]
    np.random.set_state((kind, tensors["numpy_keys"].numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = meta["python"]
    random.setstate((version, tuple(internal), gauss_next))
    cuda = [tensors[k] for k in sorted(k for k in tensors if k.startswith("cuda."))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)


def write_json(obj: dict, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2), encoding="utf-8")


def step_dirs(root: Path) -> list[tuple[int, Path]]:
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := STEP_DIR.match(p.name)) and p.is_dir()]
    return sorted(found)


class Checkpointer:
    """Saves and restores checkpoints of one run directory."""

    def __init__(self, run_dir: Path, config_json: dict, tokenizer=None, export=None):
        """``export(unit) -> state dict`` gives the weights of RUN/best and RUN/final (e.g. LoRA merged into
        plain layers); step checkpoints always hold the unit's own state, which resume needs."""
        self.run_dir = Path(run_dir)
        self.root = self.run_dir / "checkpoints"
        self.config_json, self.tokenizer, self.export = config_json, tokenizer, export

    def _write_model(self, unit: torch.nn.Module, d: Path, for_export: bool = False) -> None:
        write_json(self.config_json, d / "config.json")
        if for_export and self.export is not None:
            state = {k: v.detach().contiguous().cpu() for k, v in self.export(unit).items()}
            save_file(state, str(d / "model.safetensors"), metadata={"format": "pt"})
        else:
            save_weights(unit, d / "model.safetensors")
        if self.tokenizer is not None:
            self.tokenizer.save(d)

    def save(self, unit, opt, state: dict, keep_last: int) -> Path:
        def write(d: Path) -> None:
            self._write_model(unit, d)
            t = d / "trainer"
            t.mkdir()
            tensors, meta = optimizer_state(opt)
            save_file(tensors, str(t / "optimizer.safetensors"))
            write_json(meta, t / "optimizer.json")
            rng_tensors, rng_meta = rng_state()
            save_file(rng_tensors, str(t / "rng.safetensors"))
            write_json({**state, "rng": rng_meta}, t / "state.json")

        path = atomic_dir(self.root / f"step-{state['step']:08d}", write)
        self.prune(keep_last)
        return path

    def save_final(self, unit) -> Path:
        return atomic_dir(self.run_dir / "final", lambda d: self._write_model(unit, d, for_export=True))

    def save_best(self, unit, info: dict) -> Path:
        """RUN/best/: the model with the best validation metric so far (no trainer state)."""

        def write(d: Path) -> None:
            self._write_model(unit, d, for_export=True)
            write_json(info, d / "best.json")

        return atomic_dir(self.run_dir / "best", write)

    def prune(self, keep_last: int) -> None:
        dirs = step_dirs(self.root)
        for _, p in dirs[: -max(keep_last, 1)]:
            shutil.rmtree(p, ignore_errors=True)

    def latest(self) -> Path | None:
        for p in self.root.glob(".tmp-*") if self.root.is_dir() else []:
            shutil.rmtree(p, ignore_errors=True)  # leftovers of a crash during a write
        dirs = step_dirs(self.root)
        return dirs[-1][1] if dirs else None

    def restore(self, path: Path, unit, opt) -> dict:
        """Load weights, optimizer and RNG from ``path``; returns the trainer state dict."""
        load_weights(unit, path / "model.safetensors")
        t = path / "trainer"
        load_optimizer_state(
            opt, load_file(str(t / "optimizer.safetensors")), json.loads((t / "optimizer.json").read_text())
        )
        state = json.loads((t / "state.json").read_text())
        set_rng_state(load_file(str(t / "rng.safetensors")), state.pop("rng"))
        return state
