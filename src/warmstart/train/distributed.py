"""Several processes under torchrun: DDP by default, FSDP (``fully_shard``) with ``train.fsdp=true``.

``torchrun`` puts RANK, WORLD_SIZE, LOCAL_RANK and the rendezvous address in the environment; ``init`` then
joins the process group (gloo on CPU, NCCL on CUDA, ``train.dist_timeout`` seconds for every collective).
Without those variables every helper here is a no-op and a run is the single process it always was.

What each rank does:
- data: the training source is built with the global micro-batch (``train.batch_size`` x processes, the
  order one process with that batch has); rank r keeps its rows ``[r*b, (r+1)*b)`` of every micro-batch
  (``RankBatches``). Pretraining masks are drawn for the whole micro-batch from its seeded generator before
  the rows are cut, so N ranks see exactly the rows and masks one process with the global batch sees.
- loss: each rank's loss is weighted by its share of the loss's count (masked tokens, rows), so the average
  DDP/FSDP take of the gradients is the gradient of the global micro-batch's mean loss (``weigh``).
- evaluation: pretraining's batches (``EvalRows``) are split by rows as in training; other batches
  (finetuning: a batch may hold several rows of one example) go whole, every N-th to each DDP rank, all to
  every FSDP rank (their forwards gather the shards, so all run the same ones). The (sum, count) stats of
  the ranks are added (``shares``, ``add_up``).
- files: only rank 0 logs and writes checkpoints (FSDP: the full state gathered to it first, so the format
  stays the one of a single process); the others wait for it. A resume reads the checkpoint on every rank.
- failures: when a rank dies or hangs, the others' next collective fails (at the latest after
  ``train.dist_timeout``) and the CLI prints one line (``failure``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from warmstart.errors import WarmstartError

ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


def active() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if active() else 0


def world() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    return rank() == 0


def init(device: str, timeout: float) -> None:
    """Join torchrun's process group (once); nothing when not started by torchrun. Ranks above 0 send
    their stdout (results, progress lines) to /dev/null; their stderr (warnings, errors) stays."""
    if active() or not all(k in os.environ for k in ENV):
        return
    local = int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available() and (device == "auto" or device.startswith("cuda"))
    if cuda:
        torch.cuda.set_device(local)
    backend, here = ("nccl", torch.device("cuda", local)) if cuda else ("gloo", None)
    try:
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout), device_id=here)
    except (RuntimeError, ValueError) as exc:
        raise WarmstartError(
            f"could not join the other torchrun processes ({first_line(exc)})",
            "check torchrun's --nnodes/--node_rank/--master_addr/--master_port (or --rdzv_endpoint)",
        ) from None
    atexit.register(_close)
    if rank() > 0:
        sys.stdout = open(os.devnull, "w")  # for the life of the process


_LOST: list[bool] = []  # set once a collective failed: this rank's peers are gone or hung


def _close() -> None:
    """At exit. After a lost peer the group is not torn down: gloo's teardown can wait on the hung peer's
    pending work (a fresh-clone run once saw the survivor of a SIGSTOP'd peer stay for over 16 s), so the
    process leaves at once, with the CLI's exit code for it, its output flushed."""
    if _LOST:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(2)
    if active():
        dist.destroy_process_group()


def finish() -> None:
    """After a command succeeded on this rank: wait for the others, then tear the group down. A rank that
    ended first and destroyed its group while another still wrote and printed its results was seen to
    abort in gloo ("terminate called without an active exception"). Error paths keep the atexit teardown
    with no barrier, since a failed rank must not wait on peers that are inside a collective."""
    if active():
        dist.barrier()
        _close()


def device(d: torch.device) -> torch.device:
    """The device of this rank: CUDA device LOCAL_RANK under torchrun."""
    if active() and d.type == "cuda":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return d


def _here() -> torch.device:
    """Where the tensors of our own small collectives live (NCCL needs CUDA tensors)."""
    return (
        torch.device("cuda", torch.cuda.current_device())
        if dist.get_backend() == "nccl"
        else torch.device("cpu")
    )


def sum_all(values: list[float]) -> list[float]:
    t = torch.tensor(values, dtype=torch.float64, device=_here())
    dist.all_reduce(t)
    return t.tolist()


def _fsdp():
    """(fully_shard, FSDPModule): public in torch.distributed.fsdp since torch 2.6, composable before."""
    try:
        from torch.distributed.fsdp import FSDPModule, fully_shard
    except ImportError:  # torch 2.4, 2.5
        from torch.distributed._composable.fsdp import FSDPModule, fully_shard
    return fully_shard, FSDPModule


def sharded(module) -> bool:
    return active() and isinstance(module, _fsdp()[1])


def wrap(unit: nn.Module, fsdp: bool, dev: torch.device, seed: int) -> nn.Module:
    """What the training forward runs through: ``unit`` alone; DDP over it; or, with ``fsdp``, ``unit``
    itself sharded in place by ``fully_shard`` (every block of a ModuleList, then the whole unit). Ranks
    above 0 reseed torch's RNG (dropout differs across ranks; a resume restores each rank's own state)."""
    if not active():
        return unit
    if rank() > 0:
        torch.manual_seed(int(np.random.SeedSequence([seed, rank()]).generate_state(1)[0]))
    if not fsdp:
        ids = [dev.index] if dev.type == "cuda" else None
        # find_unused_parameters: a unit may hold parameters its forward does not use (BERT's pooler in
        # MLM); where all are used, torch warns once that the flag was not needed
        return nn.parallel.DistributedDataParallel(unit, device_ids=ids, find_unused_parameters=True)
    from torch.distributed.device_mesh import init_device_mesh

    fully_shard = _fsdp()[0]
    with torch.no_grad():  # the same start on every rank, as DDP does
        for t in [*unit.parameters(), *unit.buffers()]:
            dist.broadcast(t, 0)
    mesh = init_device_mesh(dev.type, (world(),))
    for m in reversed(list(unit.modules())):  # innermost first, as fully_shard wants
        if isinstance(m, nn.ModuleList):
            for block in m:
                fully_shard(block, mesh=mesh)
    fully_shard(unit, mesh=mesh)
    return unit


@contextlib.contextmanager
def accumulating(model: nn.Module, last: bool):
    """Gradients are averaged across ranks only at the last micro-batch of a step."""
    if isinstance(model, nn.parallel.DistributedDataParallel) and not last:
        with model.no_sync():
            yield
        return
    if sharded(model):
        model.set_requires_gradient_sync(last)
    yield


def check_batch(state: dict, batch_size: int) -> None:
    """A run resumes on as many processes as wrote its checkpoint, or with the same global batch (its data
    position counts global micro-batches); the trainer state records both."""
    saved, now = state.get("global_batch"), batch_size * world()
    if saved is not None and saved != now:
        procs = state.get("processes", 1)
        raise WarmstartError(
            f"the checkpoint was written by {procs} process{'es' if procs > 1 else ''} with a global batch "
            f"of {saved}; {world()} with train.batch_size={batch_size} make {now}",
            f"resume on {procs} processes (torchrun --nnodes x --nproc_per_node), "
            f"or set train.batch_size so that processes x batch_size = {saved}",
        )
    state["global_batch"], state["processes"] = now, world()


def rows(batch: dict) -> tuple[dict, bool]:
    """(this rank's rows ``[r*n//N, (r+1)*n//N)`` of a whole batch of n rows, True); a rank without rows
    (fewer rows than ranks) gets (the first row as a stand-in, False)."""
    n = len(batch["input_ids"]) if "input_ids" in batch else len(next(iter(batch.values())))
    lo, hi = rank() * n // world(), (rank() + 1) * n // world()
    mine = hi > lo
    if not mine:
        lo, hi = 0, 1
    return {k: v[lo:hi] if _per_row(v, n) else v for k, v in batch.items()}, mine


def _per_row(v, n: int) -> bool:
    return (torch.is_tensor(v) and v.dim() > 0 and len(v) == n) or (isinstance(v, list) and len(v) == n)


class RankBatches:
    """This rank's rows of each global micro-batch of ``source`` (built with batch_size x processes); a
    stand-in row (see ``rows``) trains with a loss that weighs zero."""

    def __init__(self, source):
        self.source, self.stand_in = source, False

    def __getattr__(self, name):
        return getattr(self.source, name)

    def batch(self, index: int) -> dict:
        if not active():
            return self.source.batch(index)
        batch, mine = rows(self.source.batch(index))
        self.stand_in = not mine
        return batch


class EvalRows:
    """Evaluation batches that processes split by rows (each scores its rows of every batch, so the batches
    and their masks are those of one process) rather than hand out whole, as other batches are (a batch
    may hold rows of one example, e.g. the windows of a long QA context)."""

    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)


def shares(batches, unit):
    """(batch, counted) pairs this rank evaluates: whole batches, every N-th (DDP) or all (FSDP: forwards
    gather the shards, so every rank runs the same ones); or, for EvalRows, its rows of each batch. An FSDP
    rank without rows runs a stand-in row in step with the others, not counted."""
    if not active() or (sharded(unit) and not isinstance(batches, EvalRows)):
        yield from ((b, True) for b in batches)
    elif isinstance(batches, EvalRows):
        for b in batches:
            part, mine = rows(b)
            if mine or sharded(unit):
                yield part, mine
    else:
        yield from ((b, True) for j, b in enumerate(batches) if j % world() == rank())


def add_up(totals: dict, unit, batches) -> dict:
    """The evaluation stats of all ranks: the sum of every rank's sums; FSDP over whole batches: rank 0's
    (every rank scored them all)."""
    if not active():
        return totals
    if sharded(unit) and not isinstance(batches, EvalRows):
        box = [totals]
        dist.broadcast_object_list(box, 0)
        return box[0]
    out: dict[str, list[float]] = {}
    parts: list = [None] * world()
    dist.all_gather_object(parts, totals)
    for part in parts:
        for k, (s, n) in part.items():
            acc = out.setdefault(k, [0.0, 0.0])
            acc[0] += s
            acc[1] += n
    return out


def signal_seen(stop) -> int | None:
    """The signal any rank caught (every rank asks after each step, so all stop after the same step)."""
    if active():
        caught = torch.tensor([stop.signum or 0], device=_here())
        dist.all_reduce(caught, op=dist.ReduceOp.MAX)
        if caught.item() and stop.signum is None:
            stop.signum = int(caught.item())
    return stop.signum


def gather(obj) -> list:
    """``obj`` of every rank, on rank 0 (others get [obj])."""
    if not active():
        return [obj]
    parts: list = [None] * world() if is_main() else None
    dist.gather_object(obj, parts, dst=0)
    return parts if is_main() else [obj]


def on_main(fn, fallback=None):
    """``fn()`` on rank 0 while the others wait; an error there is raised on every rank. Rank 0 gets
    ``fn()``'s result, the others ``fallback``."""
    if not active():
        return fn()
    box: list = [None]
    result, error = fallback, None
    if is_main():
        try:
            result = fn()
        except BaseException as exc:  # told to the others, then raised
            error = exc
            box = [(exc.problem, exc.fix) if isinstance(exc, WarmstartError) else (first_line(exc), None)]
    dist.broadcast_object_list(box, 0)
    if error is not None:
        raise error
    if box[0] is not None:
        problem, fix = box[0]
        raise WarmstartError(f"rank 0 failed: {problem}", fix or "see rank 0's error above")
    return result


def main_first(fn):
    """``fn()`` on rank 0, then on the other ranks: for setup that writes files on its first call (the
    run directory, prepared shards) and only reads them later. An error on rank 0 is raised everywhere."""
    out = on_main(fn)
    return out if is_main() else fn()


# gloo's words when a peer died or hung: in an all-reduce of ours, or in DDP's gradient all-reduce during
# backward ("Application timeout caused pair closure")
LOST = (
    "gloo",
    "NCCL",
    "nccl",
    "Connection",
    "Timed out",
    "timed out",
    "timeout",
    "Broken pipe",
    "pair closure",
)


def failure(exc: BaseException, resume: str | None = None) -> WarmstartError | None:
    """One line for a collective that failed because another rank died, hung or timed out; None for any
    other error (raised as it is)."""
    lost = isinstance(exc, dist.DistError) or (
        active() and isinstance(exc, RuntimeError) and any(m in str(exc) for m in LOST)
    )
    if not lost:
        return None
    _LOST.append(True)
    then = f"continue with: {resume}" if resume else "then continue the run with --resume"
    return WarmstartError(
        f"process {rank()} of {world()} lost contact with the others ({first_line(exc)})",
        "another process failed, was killed or hung longer than train.dist_timeout: see its own error; "
        + then,
    )


def first_line(exc: BaseException) -> str:
    """The first line of an error, without a [file.cc:123] prefix, at most 160 characters."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    text = re.sub(r"^\[[^\]]*\]\s*", "", lines[0]).split(". This is typically")[0]
    return text[:160]


class Quiet:
    """Stands in for the run logger and the progress bar on processes other than the first."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None
