"""Gradient accumulation gives the gradient of one big batch: 4 micro-batches of 8 rows equal one batch of
32 within float rounding, for every pretraining objective and for the finetuning tasks (train/step.py). The
old rule (each micro-batch's mean / 4) is shown to be off for masked LM, whose micro-batches count
different numbers of masked tokens. Accumulation together with two processes: tests/train/test_distributed.py
(2 processes x batch 4 x 2 micro-batches equal 1 process x batch 8 x 2)."""

import pytest
import torch

from tests.helpers.shapes import SHAPES, TINY_MODEL
from warmstart import config as C
from warmstart.data.shards import TokenShards
from warmstart.pretraining.build import build_unit, sections
from warmstart.pretraining.config import config_class, resolve
from warmstart.registry import OBJECTIVES, family_of, lookup
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.step import step_gradients
from warmstart.train.strategies import no_dropout

NO_DROPOUT = {
    "bert": ["model.hidden_dropout_prob=0", "model.attention_probs_dropout_prob=0"],
    "gpt2": ["model.resid_pdrop=0", "model.embd_pdrop=0", "model.attn_pdrop=0"],
    "t5": ["model.dropout_rate=0"],
    "bart": ["model.dropout=0", "model.attention_dropout=0"],
}
CASES = {  # objective: (family, shards fixture)
    "mlm": ("bert", "small_shards"),
    "mlm+nsp": ("bert", "small_shards"),
    "mlm+sop": ("bert", "small_shards"),
    "electra": ("bert", "small_shards"),
    "clm": ("gpt2", "bpe_shards"),
    "span_corruption": ("t5", "unigram_shards"),
    "denoising": ("bart", "bpe_shards"),
}


def unit_and_batch(objective: str, shards_dir, rows: int = 32):
    arch, _ = CASES[objective]
    shape = TINY_MODEL + ["model.pooler=true"] if arch == "bert" else SHAPES[arch] + ["data.seq_len=64"]
    flags = {"arch": arch, "objective": objective, "data": {"shards": str(shards_dir)}}
    _, explicit = resolve(None, None, flags, shape + NO_DROPOUT[arch])
    cfg = C.from_dict(config_class(explicit), explicit)
    tokenizer = Tokenizer.load(shards_dir / "tokenizer")
    if arch == "bert":
        cfg.model.vocab_size = tokenizer.vocab_size
    unit_cls = lookup(OBJECTIVES, "objective", objective)
    windows, collate = unit_cls.data(
        TokenShards.open(shards_dir, "train"), 64, tokenizer, *sections(cfg, unit_cls)
    )
    batch = collate(windows.get(list(range(rows))), torch.Generator().manual_seed(0))
    return build_unit(cfg, tokenizer).train(), batch


def split(batch: dict, parts: int) -> list[dict]:
    n = len(batch["input_ids"])
    cut = [n * k // parts for k in range(parts + 1)]
    per_row = {k for k, v in batch.items() if torch.is_tensor(v) and v.dim() and len(v) == n}
    return [{k: (v[a:b] if k in per_row else v) for k, v in batch.items()} for a, b in zip(cut, cut[1:])]


def gradients(unit, batches) -> tuple[float, torch.Tensor]:
    unit.zero_grad(set_to_none=True)
    torch.manual_seed(1)  # ELECTRA samples its replacements: the same draws either way
    loss, _ = step_gradients(unit, unit, batches, [True] * len(batches))
    grads = torch.cat([p.grad.flatten() for p in unit.parameters() if p.grad is not None])
    return loss, grads


@pytest.mark.parametrize("objective", list(CASES))
def test_four_micro_batches_of_8_equal_one_batch_of_32(objective, request):
    unit, batch = unit_and_batch(objective, request.getfixturevalue(CASES[objective][1]))
    loss_one, one = gradients(unit, [batch])
    loss_four, four = gradients(unit, split(batch, 4))
    assert loss_four == pytest.approx(loss_one, rel=1e-5)
    assert (one - four).abs().max() <= 1e-5 * one.abs().max()


def test_the_mean_of_micro_batch_means_was_off_for_masked_lm(small_shards):
    unit, batch = unit_and_batch("mlm", small_shards)
    _, one = gradients(unit, [batch])
    parts = split(batch, 4)
    counts = [int((p["labels"] != -100).sum()) for p in parts]
    assert len(set(counts)) > 1  # the micro-batches hold different numbers of masked tokens
    unit.zero_grad(set_to_none=True)
    for p in parts:
        loss, _ = unit(p)
        (loss / 4).backward()
    old = torch.cat([p.grad.flatten() for p in unit.parameters() if p.grad is not None])
    assert (one - old).norm() > 1e-3 * one.norm()


@pytest.mark.parametrize("task_name", ["classification", "tagging"])
def test_finetuning_tasks_accumulate_exactly(task_name, tiny_pretrained, rt_small):
    from warmstart.checkpoints.load import load_encoder
    from warmstart.commands.finetune import resolve as finetune_resolve
    from warmstart.registry import TASKS
    from warmstart.tasks.base import TrainBatches

    data = {"classification": str(rt_small), "tagging": "brown-pos-universal"}[task_name]
    flags = {"init": str(tiny_pretrained), "task": {"name": task_name}, "data": {"dataset": data}}
    limits = [
        "data.train_limit=64",
        "data.validation_limit=8",
        "data.test_limit=8",
        "task.unseen_tags=fallback",
    ]
    cfg = finetune_resolve(None, flags, limits)
    task = lookup(TASKS, "task", cfg.task.name)(cfg.task)
    encoder, tokenizer, config_json = load_encoder(cfg.init)
    task.bind(tokenizer, config_json, family_of(config_json))
    records, name = task.read_splits(cfg)
    labels = task.labels(records["train"])
    feats = task.encode(records["train"], tokenizer, labels, name)
    unit = task.build(encoder, labels)
    no_dropout(unit)  # hidden and attention dropout: the two runs must see the same network
    batch = TrainBatches(feats, 32, 0).batch(0)
    loss_one, one = gradients(unit.train(), [batch])
    loss_four, four = gradients(unit, split(batch, 4))
    assert loss_four == pytest.approx(loss_one, rel=1e-5)
    assert (one - four).abs().max() <= 1e-5 * one.abs().max()
