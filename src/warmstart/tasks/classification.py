"""Sequence classification: a randomly initialised linear layer on the [CLS] hidden state.

Minimal for now (single sentence, full finetuning); it runs on the one fit loop like pretraining does.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from warmstart.data.catalog import DataOptions, open_dataset
from warmstart.data.order import EpochOrder
from warmstart.errors import WarmstartError
from warmstart.train.checkpoint import Checkpointer, load_weights, write_json
from warmstart.train.loop import TrainConfig, evaluate, fit, pick_device
from warmstart.train.rundir import open_run_dir, save_config


class SequenceClassifier(nn.Module):
    best_metric = ("accuracy", "max")

    def __init__(self, encoder: nn.Module, num_labels: int):
        super().__init__()
        c = encoder.config
        self.encoder = encoder
        self.drop = nn.Dropout(c.hidden_dropout_prob)
        self.classifier = nn.Linear(c.hidden_size, num_labels)
        nn.init.normal_(self.classifier.weight, std=c.initializer_range)
        nn.init.zeros_(self.classifier.bias)

    def logits(self, batch: dict) -> torch.Tensor:
        hidden = self.encoder(batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids"))
        return self.classifier(self.drop(hidden[:, 0])).float()

    def forward(self, batch: dict):
        logits = self.logits(batch)
        labels = batch["labels"]
        loss_sum = F.cross_entropy(logits, labels, reduction="sum")
        n = labels.numel()
        correct = (logits.argmax(-1) == labels).sum()
        return loss_sum / n, {"loss": (loss_sum.detach(), n), "accuracy": (correct, n)}


def pad_batch(ids: list[list[int]], types: list[list[int]], labels: list[int], pad_id: int) -> dict:
    width = max(len(x) for x in ids)
    out = torch.full((len(ids), width), pad_id, dtype=torch.long)
    tt = torch.zeros((len(ids), width), dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, (x, t) in enumerate(zip(ids, types)):
        out[i, : len(x)], tt[i, : len(t)], mask[i, : len(x)] = torch.tensor(x), torch.tensor(t), 1
    return {"input_ids": out, "token_type_ids": tt, "attention_mask": mask, "labels": torch.tensor(labels)}


class Encoded:
    """A split tokenized once: ids, token types and label indices."""

    def __init__(self, records: list[dict], tokenizer, label2id: dict, max_length: int, where: str):
        unknown = sorted({r["label"] for r in records} - set(label2id))
        if unknown:
            raise WarmstartError(
                f"{where} has labels the model was not trained on: {', '.join(unknown[:5])}",
                f"the known labels are: {', '.join(label2id)}",
            )
        self.ids, self.types = tokenizer.encode_pairs([r["text"] for r in records], None, max_length)
        self.labels = [label2id[r["label"]] for r in records]
        self.pad_id = tokenizer.pad_id

    def __len__(self) -> int:
        return len(self.labels)

    def take(self, idx) -> dict:
        return pad_batch(
            [self.ids[i] for i in idx],
            [self.types[i] for i in idx],
            [self.labels[i] for i in idx],
            self.pad_id,
        )


class ExampleBatches:
    def __init__(self, data: Encoded, batch_size: int, seed: int):
        self.data = data
        lengths = [len(x) for x in data.ids]
        self.order = EpochOrder(len(data), batch_size, seed, drop_last=False, lengths=lengths)
        self.batches_per_epoch = self.order.batches_per_epoch

    def batch(self, index: int) -> dict:
        return self.data.take(self.order.indices(index))

    def position(self, index: int):
        return self.order.position(index)


def in_order(data: Encoded, batch_size: int):
    return [data.take(range(i, min(i + batch_size, len(data)))) for i in range(0, len(data), batch_size)]


def finetune_classification(
    init: str | None,
    dataset: str,
    out: str,
    *,
    epochs: int = 3,
    lr: float = 5e-5,
    batch_size: int = 32,
    max_length: int = 128,
    seed: int = 0,
    overwrite: bool = False,
    scratch_like: str | None = None,
    progress: bool = True,
    bf16: bool = False,
    train_limit: int | None = None,
) -> dict:
    """Finetune all parameters of an encoder + linear head; evaluate the best-validation model on test.

    ``init``: a pretrained run/checkpoint. ``scratch_like``: a run whose architecture and tokenizer are
    copied with random weights (the demo's scratch twin). ``train_limit``: use only the first N training
    examples (validation and test stay whole).
    """
    from warmstart.pretrained import load_encoder

    torch.manual_seed(seed)
    if init is None and scratch_like is None:
        raise WarmstartError("no model given", "pass --init RUN (a pretrained run) to finetune")
    encoder, tok, config_json = load_encoder(init or scratch_like, random_init=init is None)
    data = open_dataset(dataset, DataOptions())
    if data.kind != "labeled":
        raise WarmstartError(f"{dataset} has no labels", "pass a labeled dataset (see `warmstart data list`)")
    labels = data.labels()
    label2id = {name: i for i, name in enumerate(labels)}
    records = {s: list(data.records(s)) for s in ("train", "validation", "test")}
    records["train"] = records["train"][:train_limit]
    splits = {s: Encoded(r, tok, label2id, max_length, f"{dataset} ({s})") for s, r in records.items()}
    unit = SequenceClassifier(encoder, len(labels))
    train = ExampleBatches(splits["train"], batch_size, seed)
    per_epoch = train.batches_per_epoch
    cfg = TrainConfig(
        steps=epochs * per_epoch,
        batch_size=batch_size,
        lr=lr,
        weight_decay=0.01,
        beta2=0.999,
        eps=1e-8,
        warmup_ratio=0.1,
        eval_every=max(1, per_epoch // 4),
        save_every=per_epoch,
        keep_last=1,
        log_every=max(1, per_epoch // 20),
        seed=seed,
        progress=progress,
        bf16=bf16,
    )
    run_dir = open_run_dir(out, overwrite=overwrite)
    save_config(
        run_dir,
        {
            "task": "classification",
            "init": init,
            "scratch_like": scratch_like,
            "dataset": dataset,
            "labels": labels,
            "max_length": max_length,
            "train": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
        },
    )
    config_json = {
        **config_json,
        "architectures": ["BertForSequenceClassification"],
        "id2label": dict(enumerate(labels)),
        "label2id": label2id,
    }
    ckpt = Checkpointer(run_dir, config_json, tok)
    evals = in_order(splits["validation"], 64)
    result = fit(unit, train, evals, cfg, ckpt, desc=Path(out).name)
    load_weights(unit, run_dir / "best" / "model.safetensors")
    test = evaluate(unit, in_order(splits["test"], 64), pick_device(cfg.device), bf16)
    result["test"] = test
    write_json(
        {
            "test": test,
            "best_step": result["best_step"],
            "best_validation": result["best_value"],
            "sizes": {s: len(d) for s, d in splits.items()},
        },
        run_dir / "test_metrics.json",
    )
    return result


def read_test_metrics(run_dir: str | Path) -> dict:
    return json.loads((Path(run_dir) / "test_metrics.json").read_text())
