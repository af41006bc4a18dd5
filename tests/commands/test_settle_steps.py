"""Epochs become optimizer steps: an epoch is one pass over the training micro-batches, and with gradient
accumulation an optimizer step takes ``train.grad_accum`` of them (it once counted micro-batches as steps,
so ``epochs=1, grad_accum=4`` trained four passes)."""

from warmstart import config as C
from warmstart.commands.finetune import DEFAULTS, FinetuneConfig, _settle_steps


def _settled(per_epoch: int, **train):
    cfg = C.from_dict(FinetuneConfig, C.merge(DEFAULTS, {"init": "x", "epochs": 2, "train": train}))
    return _settle_steps(cfg, per_epoch).train


def test_an_epoch_is_a_pass_over_the_micro_batches_whatever_the_accumulation():
    plain, accumulated = _settled(40), _settled(40, grad_accum=4)
    assert plain.steps * plain.grad_accum == accumulated.steps * accumulated.grad_accum == 80
    assert (plain.steps, accumulated.steps) == (80, 20)
    assert (plain.eval_every, accumulated.eval_every) == (10, 2)  # evals_per_epoch=4 either way


def test_an_uneven_last_step_still_counts():
    assert _settled(41, grad_accum=4).steps == 22  # ceil(41 / 4) = 11 steps a pass
    assert _settled(40, grad_accum=4, steps=7).steps == 7  # train.steps, when given, wins
