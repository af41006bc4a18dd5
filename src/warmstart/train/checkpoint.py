"""Checkpoints: directories written atomically, holding weights and trainer state without pickling.

Layout of ``RUN/checkpoints/step-00000100/``::

    config.json            model config (Hugging Face field names) + a "warmstart" block
    model.safetensors      the training unit's weights (encoder + heads)
    tokenizer.json, tokenizer_config.json, special_tokens_map.json
    trainer/state.json     step, best metric, data position, python RNG, the NaN guard's counts and
                           fp16's loss scaler (its scale, growth tracker and skipped steps)
    trainer/optimizer.safetensors + optimizer.json   AdamW moments and param groups
    trainer/rng.safetensors                          torch / numpy / CUDA RNG states

A checkpoint is written to a hidden temp directory and renamed into place, so a crash never leaves a
half-written checkpoint where resume would look (``kill -9`` at any moment included: leftovers of an
interrupted write, replacement or removal are cleared or undone by ``latest()``). Running out of disk space
is a WarmstartError that names the directory; the previous checkpoint stays. The last ``keep_last`` step
directories are kept;
``RUN/best/`` holds the model with the best validation metric and ``RUN/final/`` the final model.

Under torchrun only the first process writes (FSDP: the full state gathered to it first, so the files are
those of a single process) while the others wait; ``trainer/rng-rankN.*`` hold the RNG of process N > 0.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import time
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from warmstart.atomic import check_writable, disk_full, disk_full_error, write_atomic
from warmstart.errors import WarmstartError
from warmstart.nn.sizing import check_shapes
from warmstart.tokenization import leftovers
from warmstart.train import dist_state
from warmstart.train import distributed as ddp
from warmstart.train.rundir import settle

STEP_DIR = re.compile(r"^step-(\d{8})$")
PAUSE_ENV = "WARMSTART_TEST_CHECKPOINT_PAUSE"  # fault-injection tests only (tests/train/test_kill_resume.py)
SWAP_PAUSE_ENV = "WARMSTART_TEST_SWAP_PAUSE"  # atomic_dir: after write(tmp), and between the swap's renames


def _test_pause(env: str = PAUSE_ENV) -> None:
    """Sleep $``env`` seconds (a checkpoint write: $WARMSTART_TEST_CHECKPOINT_PAUSE), so that a test's kill
    can land there; unset (every normal run), it does nothing."""
    if os.environ.get(env):
        time.sleep(float(os.environ[env]))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_dir(final: Path, write, full_fix: str | None = None) -> Path:
    """Call ``write(tmp_dir)`` then rename tmp_dir to ``final`` (replacing an older one only at the end).
    What an earlier writer of ``final`` killed outright left is cleared first (``leftovers.clear_swap``). A
    full disk is a WarmstartError naming the directory (``full_fix`` says what to do)."""
    check_writable(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    leftovers.clear_swap(final)
    tmp = leftovers.swap_name(final, "tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        write(tmp)
        _test_pause(SWAP_PAUSE_ENV)
        for f in tmp.rglob("*"):
            if f.is_file():
                with open(f, "rb+") as fh:
                    os.fsync(fh.fileno())
        if final.exists():
            old = leftovers.swap_name(final, "old")
            os.rename(final, old)
            _test_pause(SWAP_PAUSE_ENV)
            os.rename(tmp, final)
            shutil.rmtree(old)
        else:
            os.rename(tmp, final)
        _fsync_dir(final.parent)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if disk_full(exc):
            raise disk_full_error(final, full_fix) from None
        raise
    return final


def save_weights(module: torch.nn.Module, path: Path) -> None:
    state = {k: v.detach().contiguous().cpu() for k, v in module.state_dict().items()}
    save_file(state, str(path), metadata={"format": "pt"})


def read_tensors(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file; a missing, truncated or damaged file is a WarmstartError."""
    if not Path(path).is_file():
        raise WarmstartError(f"{path} is missing", "pass a complete run or checkpoint directory")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise WarmstartError(
            f"{path} is damaged or not a safetensors file ({exc})",
            "use another checkpoint, or write this one again",
        ) from None


def load_weights(module: torch.nn.Module, path: Path, strict: bool = True) -> tuple[list, list]:
    missing, unexpected = dist_state.load_state(module, read_tensors(path), strict=strict)
    return missing, unexpected


def optimizer_state(opt: torch.optim.Optimizer, unit=None) -> tuple[dict, dict]:
    """(tensors, meta) of the optimizer; ``unit``: the model, whose FSDP shards are gathered first (every
    process calls it; the others get ({}, {}))."""
    sd = dist_state.optimizer_state(unit, opt)
    if not sd:
        return {}, {}
    tensors = {}
    for idx, st in sd["state"].items():
        for name, value in st.items():
            t = value if torch.is_tensor(value) else torch.tensor(value)
            tensors[f"{idx}.{name}"] = t.detach().contiguous().cpu()
    groups = [{k: v for k, v in g.items() if k not in IMPLEMENTATION} for g in sd["param_groups"]]
    return tensors, {"param_groups": groups}


# How the update is computed, not what it is: left out of checkpoints, so that a run saved with the fused
# kernel resumes where only foreach exists (sharded parameters, another device) and the other way round.
IMPLEMENTATION = ("foreach", "fused", "capturable", "differentiable")


def load_optimizer_state(opt: torch.optim.Optimizer, tensors: dict, meta: dict, unit=None) -> None:
    state: dict = {}
    for key, t in tensors.items():
        idx, name = key.split(".", 1)
        state.setdefault(int(idx), {})[name] = t
    current = [{k: g[k] for k in IMPLEMENTATION if k in g} for g in opt.param_groups]
    groups = [{**g, **mine} for g, mine in zip(meta["param_groups"], current)]
    groups += meta["param_groups"][len(current) :]  # a count mismatch is refused by the optimizer itself
    try:
        dist_state.load_optimizer_state(unit, opt, {"state": state, "param_groups": groups})
    except ValueError as err:  # torch: the groups' counts or sizes differ from the model's parameters
        raise WarmstartError(
            f"the checkpoint's optimizer state does not fit this model's trainable parameters ({err})",
            "it was written by a version (or settings) that trained other parameters: start a new run from "
            "it with --init instead of --resume",
        ) from None


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
    bit_generator, pos, has_gauss, gauss = meta["numpy"]
    np.random.set_state(
        (bit_generator, tensors["numpy_keys"].numpy().astype(np.uint32), pos, has_gauss, gauss)
    )
    version, internal, gauss_next = meta["python"]
    random.setstate((version, tuple(internal), gauss_next))
    cuda = [tensors[k] for k in sorted(k for k in tensors if k.startswith("cuda."))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)


def write_json(obj: dict, path: Path) -> None:
    """``obj`` as JSON at ``path``, whole or not at all (a temp file renamed into place)."""
    text = json.dumps(obj, indent=2)
    write_atomic(path, lambda fh: fh.write(text), text=True)


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

    def _weights(self, unit: torch.nn.Module, for_export: bool = False) -> dict:
        """The unit's weights as CPU tensors (torchrun: on the first process; FSDP gathers the shards)."""
        if for_export and self.export is not None and not ddp.sharded(unit):
            state = self.export(unit) if ddp.is_main() else {}
        else:
            state = dist_state.full_state(unit)
        return {k: v.detach().contiguous().cpu() for k, v in state.items()}

    def _write_model(self, weights: dict, d: Path) -> None:
        write_json(self.config_json, d / "config.json")
        save_file(weights, str(d / "model.safetensors"), metadata={"format": "pt"})
        if self.tokenizer is not None:
            self.tokenizer.save(d)

    def save(self, unit, opt, state: dict, keep_last: int) -> Path:
        weights, (tensors, meta) = self._weights(unit), optimizer_state(opt, unit)
        rngs = ddp.gather(rng_state())  # every process's RNG, for an exact resume of each

        def write(d: Path) -> None:
            self._write_model(weights, d)
            _test_pause()
            t = d / "trainer"
            t.mkdir()
            save_file(tensors, str(t / "optimizer.safetensors"))
            write_json(meta, t / "optimizer.json")
            (rng_tensors, rng_meta), others = rngs[0], rngs[1:]
            save_file(rng_tensors, str(t / "rng.safetensors"))
            for r, (rank_tensors, rank_meta) in enumerate(others, 1):
                save_file(rank_tensors, str(t / f"rng-rank{r}.safetensors"))
                write_json(rank_meta, t / f"rng-rank{r}.json")
            write_json({**state, "rng": rng_meta}, t / "state.json")

        def write_and_prune() -> Path:
            path = atomic_dir(self.root / f"step-{state['step']:08d}", write, self._full_fix())
            self.prune(keep_last)
            return path

        out = ddp.on_main(write_and_prune, self.root / f"step-{state['step']:08d}")
        settle(self.run_dir)  # --overwrite: the replaced run goes once the new one can be resumed
        return out

    def _full_fix(self) -> str:
        """What to do when the disk is full: the last complete checkpoint is intact, resume from it."""
        dirs = step_dirs(self.root)
        kept = f"the last complete checkpoint, {dirs[-1][1]}, is intact" if dirs else "no checkpoint yet"
        return f"{kept}; free space on that disk, then continue with --resume"

    def save_final(self, unit) -> Path:
        weights, final = self._weights(unit, for_export=True), self.run_dir / "final"
        write = lambda d: self._write_model(weights, d)  # noqa: E731
        out = ddp.on_main(lambda: atomic_dir(final, write, self._full_fix()), final)
        settle(self.run_dir)
        return out

    def save_best(self, unit, info: dict) -> Path:
        """RUN/best/: the model with the best validation metric so far (no trainer state)."""
        weights, best = self._weights(unit, for_export=True), self.run_dir / "best"

        def write(d: Path) -> None:
            self._write_model(weights, d)
            write_json(info, d / "best.json")

        return ddp.on_main(lambda: atomic_dir(best, write, self._full_fix()), best)

    def prune(self, keep_last: int) -> None:
        dirs = step_dirs(self.root)
        for _, p in dirs[: -max(keep_last, 1)]:
            gone = p.parent / f".del-{p.name}"  # renamed first: a kill mid-removal leaves no partial step-*
            shutil.rmtree(gone, ignore_errors=True)
            os.rename(p, gone)
            shutil.rmtree(gone, ignore_errors=True)

    def latest(self) -> Path | None:
        """The newest complete step checkpoint, after clearing what a crash may have left."""
        self.recover()
        dirs = step_dirs(self.root)
        return dirs[-1][1] if dirs else None

    def recover(self) -> None:
        """Undo what a kill in ``atomic_dir`` or ``prune`` left: temp and half-removed directories go; an
        ``.old-NAME-PID`` whose NAME is missing (killed between the two renames) is put back."""
        for folder in (self.root, self.run_dir):
            if not folder.is_dir():
                continue
            for p in sorted(folder.iterdir()):
                if p.name.startswith((".tmp-", ".del-")):
                    shutil.rmtree(p, ignore_errors=True)
                elif p.name.startswith(".old-"):
                    name = p.name[len(".old-") :].rsplit("-", 1)[0]
                    if (folder / name).exists():
                        shutil.rmtree(p, ignore_errors=True)
                    else:
                        os.rename(p, folder / name)

    def restore(self, path: Path, unit, opt) -> dict:
        """Load weights, optimizer and RNG from ``path``; returns the trainer state dict."""
        t = path / "trainer"
        for name in ("optimizer.json", "optimizer.safetensors", "state.json", "rng.safetensors"):
            if not (t / name).is_file():
                raise _incomplete(path, f"{t / name} is missing")
        if not ddp.active():  # a run's config.yaml edited away from its weights: named, not a traceback
            config = next((p / "config.yaml" for p in path.parents if (p / "config.yaml").is_file()), None)
            check_shapes(lambda: unit, path / "model.safetensors", str(config or path))
        load_weights(unit, path / "model.safetensors")
        meta = _read_json(path, t / "optimizer.json")
        load_optimizer_state(opt, read_tensors(t / "optimizer.safetensors"), meta, unit)
        state = _read_json(path, t / "state.json")
        if not isinstance(state, dict) or "rng" not in state:
            raise _incomplete(path, f"{t / 'state.json'} lacks the trainer state")
        check_state(path, state)
        rng = read_tensors(t / "rng.safetensors"), state.pop("rng")
        mine = t / f"rng-rank{ddp.rank()}.safetensors"  # torchrun: each process its own RNG
        if ddp.rank() > 0 and mine.is_file():
            rng = read_tensors(mine), _read_json(path, mine.with_suffix(".json"))
        try:
            set_rng_state(*rng)
        except (KeyError, TypeError, ValueError, RuntimeError, OverflowError) as exc:
            raise _incomplete(path, f"its RNG state does not read back ({type(exc).__name__})") from None
        return state


# trainer/state.json's counts: whole numbers from 0 (int64); "step" is also the directory's step-N
STATE_COUNTS = ("step", "epoch", "batch_in_epoch", "tokens_seen", "bad_steps", "scaler_skipped",
                "global_batch", "processes")  # fmt: skip


def check_state(checkpoint: Path, state: dict) -> None:
    """Refuse a trainer state whose numbers no run writes (a step of 1e30, a negative epoch, a best step
    after the step, a best value that is not a finite number): the checkpoint is named as damaged, the
    earlier one offered, before a number reaches the loop."""
    where = checkpoint / "trainer" / "state.json"

    def bad(key: str, why: str) -> WarmstartError:
        return _incomplete(checkpoint, f"{where} holds {key} {str(state.get(key))[:40]}, {why}")

    for key in STATE_COUNTS:
        if not _count(state.get(key, 0)):
            raise bad(key, "not a count")
    m = STEP_DIR.match(checkpoint.name)
    if m and state.get("step") != int(m.group(1)):
        raise bad("step", f"not the step of {checkpoint.name}")
    best_step, best_value = state.get("best_step"), state.get("best_value")
    if best_step is not None and not (_count(best_step) and best_step <= state.get("step", 0)):
        raise bad("best_step", "not a step of this run")
    if best_value is not None and not (_number(best_value) and math.isfinite(best_value)):
        raise bad("best_value", "not a finite number")
    norms = state.get("grad_norms", [])
    if not isinstance(norms, list) or not all(_number(x) for x in norms):
        raise bad("grad_norms", "not a list of numbers")
    if not isinstance(state.get("stopped_early", False), bool):
        raise bad("stopped_early", "not true or false")


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _incomplete(checkpoint: Path, what: str) -> WarmstartError:
    earlier = [
        p for _, p in step_dirs(checkpoint.parent) if p.name < checkpoint.name and (p / "trainer").is_dir()
    ]
    fix = f"move {checkpoint} away to resume from {earlier[-1].name}" if earlier else "start the run again"
    return WarmstartError(f"the checkpoint {checkpoint} is damaged: {what}", fix)


def _read_json(checkpoint: Path, path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise _incomplete(checkpoint, f"{path} is not valid JSON (cut short?)") from None
