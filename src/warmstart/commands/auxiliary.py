"""`finetune ... aux.objectives=mlm`: the end task trained jointly with self-supervised objectives on its own
text (or a corpus), through the joint unit of tasks/joint.py. Everything is checked before training."""

from __future__ import annotations

import sys

import torch

from warmstart.checkpoints.load import backbone
from warmstart.data.catalog import open_dataset
from warmstart.data.packing import WindowBatches
from warmstart.data.token_stream import TokenStream
from warmstart.errors import WarmstartError
from warmstart.registry import OBJECTIVES, family_of, lookup
from warmstart.tasks.joint import JointBatches, JointUnit, task_texts
from warmstart.train import distributed as ddp


def check_aux(cfg, config_json: dict) -> None:
    """Refuse, before the run directory exists, objectives this model cannot train and setups not covered."""
    if not cfg.aux.objectives:
        return
    if ddp.world() > 1 or cfg.train.fsdp:
        raise WarmstartError(
            "aux.objectives runs in one process only (torchrun splits the task's rows, not the objectives')",
            "run it without torchrun",
        )
    fam = family_of(config_json).name
    for name in cfg.aux.objectives:
        cls = lookup(OBJECTIVES, "objective", name)
        if fam not in cls.families or cls.data_kind != "windows":
            fits = [n for n, c in OBJECTIVES.items() if fam in c.families and c.data_kind == "windows"]
            raise WarmstartError(
                f"aux.objectives: {name} cannot train a {fam} model beside a task",
                f"choose from: {', '.join(fits)}",
            )


def aux_texts(cfg, records: dict) -> list[str]:
    """The objectives' text: aux.corpus's documents (at most aux.corpus_limit), or the task's own inputs."""
    if not cfg.aux.corpus:
        return task_texts(records["train"])
    texts = []
    for r in open_dataset(cfg.aux.corpus).records("train"):
        texts += task_texts([r])
        if len(texts) >= cfg.aux.corpus_limit:
            break
    if not texts:
        raise WarmstartError(f"aux.corpus {cfg.aux.corpus} has no text", "name a corpus, e.g. wiki-leads")
    return texts


def joint_training(cfg, unit, batches, texts: list[str], features: dict, tokenizer, seed: int):
    """(the joint unit, its batches) around the task's ``unit`` and training ``batches``; ``texts``: what
    ``aux_texts`` gave."""
    aux = cfg.aux
    model = backbone(unit)
    stream = TokenStream(tokenizer.encode_batch(texts), tokenizer.doc_sep_id)
    seq_len = aux.seq_len or cfg.task.max_length
    units, sources = {}, []
    for i, name in enumerate(aux.objectives):
        cls = OBJECTIVES[name]
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
