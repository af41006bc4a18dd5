"""`warmstart finetune`: a labeled task on a pretrained (or scratch) encoder, through the one fit loop.

The steps: resolve the config, read the init once and check it against its card, encode the splits, then
for each seed build the unit (the init's weights, the task's new head, the strategy: what is trained, LoRA,
re-init, layer-wise LR), train it with the fit loop (validation, best model, optional early stopping) and
score the best model once on test. Several seeds: ``RUN/seed-N`` each, ``RUN/summary.json`` with their
spread and failed runs; what a family does differently it declares (train/loop.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from warmstart import config as C
from warmstart.checkpoints.card import checkpoint_config
from warmstart.checkpoints.load import (
    Pretrained,
    backbone,
    check_length,
    load_finetuned,
    read_pretrained,
    task_encoder,
)
from warmstart.checkpoints.workdir import recorded, resumed_paths
from warmstart.config import opt
from warmstart.data.options import FinetuneDataConfig, data_columns, split_files
from warmstart.data.packing import WindowBatches
from warmstart.data.subsets import check_fraction
from warmstart.data.token_stream import TokenStream
from warmstart.errors import WarmstartError
from warmstart.hub.on_the_fly import warmstart_dir
from warmstart.objectives.sift import SiftConfig, attach
from warmstart.paths import refuse_overlap
from warmstart.registry import OBJECTIVES, TASKS, family_of, lookup
from warmstart.study.seeds import majority_share, summarize_seeds
from warmstart.tasks.base import EvalBatches, Task, TaskConfig, fitting_task, task_splits
from warmstart.tasks.breakdown import breakdown, counting
from warmstart.tasks.joint import AuxConfig, JointBatches, JointUnit, aux_texts, check_aux, exported
from warmstart.tasks.label_problem import problem_from_labels
from warmstart.tasks.multitask import MultitaskConfig
from warmstart.tasks.smoothing import smoothed
from warmstart.tasks.split_size import few_examples_line
from warmstart.tasks.truncation import truncation_note
from warmstart.tokenization.open_words import reading, teach
from warmstart.train import distributed as ddp
from warmstart.train.checkpoint import Checkpointer, write_json
from warmstart.train.fit import fit
from warmstart.train.loop import TrainConfig, evaluate, pick_device
from warmstart.train.precision import autocast_dtype
from warmstart.train.resume import check_fingerprint, records_fingerprint, resumed_settings, write_fingerprint
from warmstart.train.rundir import hold, open_run_dir, save_config, unwind
from warmstart.train.strategies import StrategyConfig, apply_strategy, describe, lr_scales
from warmstart.train.trackers import check_installed
from warmstart.train.trackers.run import Trackers


@dataclass
class FinetuneConfig:
    out: str = opt("runs/finetune", "run directory (refused if it exists, unless --resume or --overwrite)")
    init: str = opt("", "the pretrained run or checkpoint directory to start from")
    from_scratch: bool = opt(
        False, "random weights with init's architecture and tokenizer (the scratch twin)"
    )
    epochs: float = opt(3.0, "passes over the training split (a non-zero train.steps wins)")
    evals_per_epoch: int = opt(4, "validation evaluations per epoch (a non-zero train.eval_every wins)")
    breakdown: bool = opt(
        True, "score the test split per class too: precision/recall/F1, confusion matrix (in the same pass)"
    )
    seeds: list[int] = opt([0], "one run per seed (head init, data order, dropout); 2+ seeds: a summary")
    eval_batch_size: int = opt(64, "examples per evaluation batch")
    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
    data: FinetuneDataConfig = dataclasses.field(default_factory=FinetuneDataConfig)
    strategy: StrategyConfig = dataclasses.field(default_factory=StrategyConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    multitask: MultitaskConfig = dataclasses.field(default_factory=MultitaskConfig)
    aux: AuxConfig = dataclasses.field(default_factory=AuxConfig)
    sift: SiftConfig = dataclasses.field(default_factory=SiftConfig)

    def __post_init__(self):
        if not self.epochs > 0:
            raise WarmstartError(f"epochs must be above 0, got {self.epochs}", "e.g. --epochs 3")
        if self.eval_batch_size < 1:
            raise WarmstartError("eval_batch_size must be at least 1", "e.g. eval_batch_size=64")
        check_fraction(self.data.train_fraction, "data.train_fraction")


# The lectures' recipe: small learning rate, warmup + linear decay, AdamW with bias correction, batch 32.
DEFAULTS = {"train": {"steps": 0, "lr": 2e-5, "batch_size": 32, "weight_decay": 0.01, "beta2": 0.999,
                      "eps": 1e-8, "warmup_ratio": 0.1, "eval_every": 0, "save_every": 0, "keep_last": 1,
                      "log_every": 0}}  # fmt: skip


def settings(config_file: str | None, flags: dict | None, overrides) -> dict:
    """A new run's settings as given: defaults < config file < flags < overrides."""
    return C.layered(defaults=DEFAULTS, config_file=config_file, flags=flags, overrides=list(overrides))


def resolve(config_file: str | None, flags: dict, overrides: list[str]) -> FinetuneConfig:
    return C.from_dict(FinetuneConfig, settings(config_file, flags, overrides))


def _settle_steps(cfg: FinetuneConfig, per_epoch: int) -> FinetuneConfig:
    """Concrete steps / eval / save / log intervals from epochs, unless the user set them. ``per_epoch``
    counts micro-batches; an optimizer step takes ``train.grad_accum`` of them."""
    t = cfg.train
    per_epoch = max(1, math.ceil(per_epoch / t.grad_accum))
    steps = t.steps or max(1, math.ceil(cfg.epochs * per_epoch))
    every = t.eval_every or max(1, per_epoch // max(cfg.evals_per_epoch, 1))
    log_every = t.log_every or max(1, min(every, per_epoch // 20))
    train = dataclasses.replace(
        t, steps=steps, eval_every=every, save_every=t.save_every or every, log_every=log_every
    )
    return dataclasses.replace(cfg, train=train)


@dataclass
class Prepared:
    """What every seed's run shares: the init read once, the task, its labels and its encoded splits."""

    init: Pretrained
    task: Task
    labels: list[str]
    features: dict
    counts: dict[str, int]  # each training label's count (the test breakdown's)
    words: Any  # the tokenizer the features were encoded with (a character model's: holding their words)
    texts: list[str] | None  # joint training's text (aux.objectives), else None
    ready: dict  # seed -> (unit, strategy report) built before the run directory (the first seed's)
    note: str | None = None  # what task.max_length cuts (tasks/truncation.py), said as the first seed starts


def finetune(
    config_file: str | None = None,
    flags: dict | None = None,
    overrides=(),
    resume: str | None = None,
    overwrite: bool = False,
    hooks=(),
) -> dict:
    """Run every seed of the config; returns {"runs": {seed: result}, "summary": ... (2+ seeds)}."""
    cfg, explicit = _config(config_file, flags, overrides, resume)
    cfg = dataclasses.replace(cfg, task=fitting_task(cfg.task, cfg.data, explicit, resume))  # as study does
    task = lookup(TASKS, "task", cfg.task.name)(cfg.task)
    # a bad --init (its weights too), labels or strategy fail here, before the run directory exists
    init = read_pretrained(warmstart_dir(cfg.init) or cfg.init, random_init=cfg.from_scratch)  # read once
    task.bind(init.tokenizer, init.config_json, family_of(init.config_json))
    cfg = _checked(cfg, init, explicit, resume)
    records, dataset_name = task_splits(task, cfg)
    cfg = task.settle(problem_from_labels(cfg, task, records["train"], explicit, resume), records["train"])
    fingerprint = records_fingerprint(records)
    if resume:  # ... and so is data that is not what the run started on
        check_fingerprint(Path(resume), fingerprint)
    prep = _prepared(cfg, init, task, records, dataset_name)
    ddp.init(cfg.train.device, cfg.train.dist_timeout)  # torchrun: join the other processes
    cfg = _settle_steps(
        cfg, task.train_batches(prep.features["train"], global_batch(cfg), 0).batches_per_epoch
    )

    def start() -> Path:  # torchrun: the first process creates the run directory, the others then use it
        root = open_run_dir(cfg.out, resume=bool(resume) or not ddp.is_main(), overwrite=overwrite)
        if not resume and ddp.is_main():
            save_config(root, recorded(C.to_dict(cfg)))  # and where it started, for --resume elsewhere
            write_fingerprint(root, fingerprint)
        return root

    root = ddp.main_first(start)
    with hold(root) if ddp.is_main() else contextlib.nullcontext():  # one process trains in a run at a time
        results = _seeds(cfg, prep, root, resume, hooks)
    out = {"runs": results, "run_dir": str(root)}
    seeds = list(results)
    if len(seeds) > 1 and ddp.is_main():
        majority = majority_share(records["validation"])
        out["summary"] = summarize_seeds(root, {s: r["test_metrics"] for s, r in results.items()}, majority)
    return out


def _config(config_file, flags, overrides, resume) -> tuple[FinetuneConfig, dict]:
    """(the run's config, the settings given explicitly: {} resuming); what no run can start with is
    refused here, before anything is read."""
    explicit: dict = {}
    if resume:  # the same run: flags that would change it are refused
        check = functools.partial(C.from_dict, FinetuneConfig)
        resumed = resumed_settings(resume, flags, overrides, check)
        cfg = C.from_dict(FinetuneConfig, resumed_paths(resume, resumed))  # relative paths: where it started
    else:
        explicit = settings(config_file, flags, overrides)
        cfg = C.from_dict(FinetuneConfig, explicit)
    if not cfg.init:
        raise WarmstartError("no model given", "pass --init RUN (a pretrained run or checkpoint directory)")
    check_installed(cfg.train.report_to)  # train.report_to=mlflow without mlflow: one line, before any work
    if not resume:  # an output that is, holds or lies inside an input is refused before anything changes
        files = {f"--{split}-file": f for split, f in split_files(cfg.data).items()}
        refuse_overlap(cfg.out, {"--init": cfg.init, "--dataset": cfg.data.dataset, **files})
    if cfg.train.fsdp and cfg.strategy.strategy == "lora":
        raise WarmstartError(
            "train.fsdp cannot export a LoRA run yet (merging the adapters needs the whole model)",
            "drop train.fsdp=true: several processes then use DDP",
        )
    return cfg, explicit


def _checked(cfg: FinetuneConfig, init: Pretrained, explicit: dict, resume) -> FinetuneConfig:
    """``cfg`` checked against the init's card, no model built; with the family's ``default_strategy`` where
    a new run names none (ELMo: frozen)."""
    check_length(init.model_cfg, cfg.task.max_length, "task.max_length")
    check_aux(cfg, family_of(init.config_json).name, OBJECTIVES)
    default = getattr(init.model_cls, "default_strategy", None)
    if default is not None and not resume and "strategy" not in explicit.get("strategy", {}):
        strategy, line = default
        print(line, file=sys.stderr)
        cfg = dataclasses.replace(cfg, strategy=dataclasses.replace(cfg.strategy, strategy=strategy))
    return cfg


def _prepared(cfg: FinetuneConfig, init: Pretrained, task, records: dict, dataset_name: str) -> Prepared:
    """The labels, the first seed's unit (built here: a task or strategy that refuses it writes nothing) and
    the encoded splits."""
    labels = task.run_labels(records)
    seed = _seed_list(cfg)[0]
    first = _unit(cfg, init, task, labels, seed)
    # a character model (ELMo) reads every word's characters: the first unit learns them here
    words = reading(first[0], init.tokenizer, records)
    features = {s: task.encode(rows, words, labels, f"{dataset_name} ({s})") for s, rows in records.items()}
    texts = aux_texts(cfg, records) if cfg.aux.objectives else None  # joint training's own text
    cut = truncation_note(task.kind, records["train"], init.tokenizer, cfg.task.max_length, init.model_cfg)
    note = "\n".join(filter(None, [cut, few_examples_line(records)])) or None
    counts = label_counts(records["train"])
    return Prepared(init, task, labels, features, counts, words, texts, {seed: first}, note)


def _unit(cfg: FinetuneConfig, init: Pretrained, task, labels: list[str], seed: int, words=None) -> tuple:
    """(a seed's training unit, its strategy report): a fresh encoder with the init's weights under the task's
    new head, both drawn from ``seed``, with SiFT, the words' characters and the strategy applied."""
    torch.manual_seed(seed)
    unit = task.build(task_encoder(init.encoder()), labels)
    smoothed(unit, cfg.task.label_smoothing)
    attach(unit, cfg.sift)  # sift.weight > 0: the unit adds SiFT's penalty while training
    teach(unit, words)  # the words the features were encoded with
    return unit, apply_strategy(unit, cfg.strategy, seed)


def _seed_list(cfg: FinetuneConfig) -> list[int]:
    return list(dict.fromkeys(cfg.seeds)) or [cfg.train.seed]


def _seeds(cfg: FinetuneConfig, prep: Prepared, root: Path, resume, hooks) -> dict:
    """Train (or, resuming, finish) every seed's run under ``root``; {seed: result}."""
    seeds = _seed_list(cfg)
    results = {}
    try:
        for seed in seeds:
            run_dir = root if len(seeds) == 1 else root / f"seed-{seed}"
            done = run_dir / "test_metrics.json"
            if resume and done.is_file():
                results[seed] = {"test_metrics": json.loads(done.read_text())}
                continue
            if len(seeds) > 1:
                run_dir.mkdir(exist_ok=True)
                if ddp.is_main():
                    print(
                        f"seed {seed} ({seeds.index(seed) + 1} of {len(seeds)}): {run_dir}", file=sys.stderr
                    )
            run_cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, seed=seed))
            resumed = bool(resume) and (run_dir / "checkpoints").is_dir()
            results[seed] = _one_run(run_cfg, prep, run_dir, resumed, hooks)
    except BaseException as exc:  # no checkpoint yet: the replaced run comes back, or a refused new one goes
        if ddp.is_main():
            unwind(root, bool(resume), exc)
        raise
    return results


def _one_run(cfg: FinetuneConfig, prep: Prepared, run_dir: Path, resume: bool, hooks) -> dict:
    seed, task = cfg.train.seed, prep.task
    unit, report = prep.ready.pop(seed, None) or _unit(cfg, prep.init, task, prep.labels, seed, prep.words)
    if ddp.is_main():
        print("\n".join(filter(None, [prep.note, describe(report)])), file=sys.stderr)
        prep.note = None  # said once, not per seed
    scales = lr_scales(unit, cfg.strategy.layer_lr_decay) if cfg.strategy.layer_lr_decay != 1.0 else None
    batches = task.train_batches(prep.features["train"], global_batch(cfg), seed)
    if prep.texts is not None:  # joint training: RUN/best and RUN/final hold the task's model alone
        unit, batches = joint_training(
            cfg, unit, batches, prep.texts, prep.features, prep.init.tokenizer, seed
        )
        scales = {f"task.{k}": v for k, v in scales.items()} if scales else None
    columns = data_columns(cfg.data, task.kind, task.name)  # what `evaluate` reads in a file, unless told
    config_json = checkpoint_config(prep.init.config_json, task, prep.labels, columns)
    ckpt = Checkpointer(run_dir, config_json, prep.init.tokenizer, export=exported)
    trackers = Trackers(run_dir, cfg.train.report_to)  # open from fit's start to the test metrics
    result = fit(
        unit,
        batches,
        EvalBatches(prep.features["validation"], cfg.eval_batch_size),
        cfg.train,
        ckpt,
        resume=resume,
        hooks=hooks,
        desc=f"finetune {task.name}" + (f" seed {seed}" if len(cfg.seeds) > 1 else ""),
        command="finetune",
        lr_scales=scales,
        trackers=trackers,
    )
    metrics, test = _tested(cfg, prep, run_dir, result, report, unit)
    if ddp.is_main():
        write_json(metrics, run_dir / "test_metrics.json")
        trackers.finish(result["step"], test)  # test/<metric>, the run's files; the trackers' runs end
        shown = ", ".join(f"{k} {v:.4f}" for k, v in test.items() if k != "loss")
        print(f"test ({run_dir}): {shown}", file=sys.stderr)
    return {**result, "test_metrics": metrics}


def _tested(cfg: FinetuneConfig, prep: Prepared, run_dir: Path, result: dict, report: dict, unit) -> tuple:
    """(the run's test_metrics.json, the test scores): the best model scored once on test, per class too
    (cfg.breakdown), with what the run learned beside them (``learned``: train/loop.py)."""
    best, _, _, _ = load_finetuned(run_dir / "best")
    teach(best, prep.words)
    device = pick_device(cfg.train.device)
    test_batches = EvalBatches(prep.features["test"], cfg.eval_batch_size)
    dtype = autocast_dtype(cfg.train)  # bf16, fp16 or None: as validation picked the model
    shown = "testing" if cfg.train.progress else None
    one_pass = cfg.breakdown and not ddp.active()  # per class while scoring (torchrun: each process a share)
    with counting(best) if one_pass else contextlib.nullcontext() as confusion:
        test = evaluate(best, test_batches, device, dtype, shown)
    parts = confusion.summary(prep.counts) if confusion is not None else None
    if cfg.breakdown and ddp.active() and ddp.is_main():  # torchrun: a pass of its own over every batch
        parts = breakdown(best, test_batches, device, prep.counts, dtype)
    metrics = {
        "test": test,
        "best_step": result["best_step"],
        "best_validation": result["best_value"],
        "metric": result["metric"],  # train.metric_for_best_model, or the task's own
        "stopped_early": result["stopped_early"],
        "steps": result["step"],
        "sizes": {s: f.num_examples() for s, f in prep.features.items()},
        "parameters": report,
    }
    if parts is not None:
        metrics["breakdown"] = parts
    # the trained unit's (joint training: the objectives' weights) is logged, the best model's is a result
    for source, stream in ((unit, sys.stderr), (backbone(best), sys.stdout)):
        if hasattr(source, "learned"):
            entries, line = source.learned()
            metrics.update(entries)
            if ddp.is_main():
                print(line, file=stream)
    return metrics, test


def joint_training(cfg, unit, batches, texts: list[str], features: dict, tokenizer, seed: int):
    """(the joint unit of tasks/joint.py, its batches) around the task's ``unit`` and training ``batches``:
    each of aux.objectives (the registry's) on the unit's model; ``texts``: what ``aux_texts`` gave."""
    aux = cfg.aux
    model = backbone(unit)
    stream = TokenStream(tokenizer.encode_batch(texts), tokenizer.doc_sep_id)
    seq_len = aux.seq_len or cfg.task.max_length
    units, sources = {}, []
    for i, name in enumerate(aux.objectives):
        cls: Any = OBJECTIVES[name]  # an Objective class (objectives/base.py)
        cls.check_tokenizer(tokenizer)
        sections = [section() for section in cls.sections.values()]
        torch.manual_seed(seed * 1000 + i + 1)  # the objective's head: seeded like the task's head
        units[name] = cls(model, *sections)
        windows, collate = cls.data(stream, seq_len, tokenizer, *sections)
        size = aux.batch_size or cfg.train.batch_size
        sources.append(WindowBatches(windows, size, seed * 1000 + i + 1, collate))
        if ddp.is_main():
            print(
                f"aux {name}: {len(windows):,} windows of {seq_len} tokens from {stream.num_docs:,} texts "
                f"({stream.num_tokens:,} tokens)",
                file=sys.stderr,
            )
    weights = aux.weights or [1.0] * len(units)
    dev = features["validation"] if aux.learn_weights else None
    joint = JointUnit(unit, model, units, weights, aux)
    every = aux.meta_every * cfg.train.grad_accum
    return joint, JointBatches(batches, sources, dev, every, seed)


def label_counts(records: list[dict]) -> dict[str, int]:
    """How often each single label (or tag) occurs in the training records; {} for other kinds."""
    counts: dict[str, int] = {}
    for r in records:
        values = r["tags"] if "tags" in r else [r["label"]] if isinstance(r.get("label"), str) else []
        for v in values:
            counts[v] = counts.get(v, 0) + 1
    return counts


def global_batch(cfg: FinetuneConfig) -> int:
    """Rows per micro-batch over all processes: under torchrun each process takes its train.batch_size."""
    return cfg.train.batch_size * ddp.world()
