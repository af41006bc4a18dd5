"""Multiple choice by likelihood: every choice scored as the output a text-to-text model would write.

Each choice of a row is written as the target of the row's input, with the ids a target has in training
(T5 ``choice </s>``; BART ``<s> choice </s>``; GPT-2 ``</s> input separator choice </s>``, the prompt not
scored), and its tokens' log-probabilities under the model are summed. The choices of every row of a batch
go through one forward pass together, padded as training batches are. ``task.choice_scoring`` picks how a
choice's score is read:

    likelihood  (default) the sum, end-of-sequence token included: the log-probability that the model writes
                exactly that choice and stops. It is the quantity finetuning maximises (the teacher-forced
                cross-entropy of the whole target), so it ranks the choices as the trained model does, and
                every choice gets a score: the pick never misses, where a generated text may match none.
    mean        the sum over the number of scored tokens: a long choice is not penalised for its length (the
                normalisation GPT-3 used for zero-shot multiple choice; a model finetuned on the choices needs
                it less, since its end token already closes a short choice's probability).
    generate    the model writes an output (greedy or beam search) that exact match compares with the right
                choice: an output matching no choice is wrong.
"""

from __future__ import annotations

import torch

from warmstart.errors import WarmstartError
from warmstart.objectives.lm_loss import IGNORE

SCORINGS = ("likelihood", "mean", "generate")
DEFAULT = "likelihood"


def choice_scoring(cfg) -> str:
    """``task.choice_scoring`` of a task config (``likelihood`` where the config has no such key)."""
    mode = getattr(cfg, "choice_scoring", DEFAULT) or DEFAULT
    if mode not in SCORINGS:
        raise WarmstartError(
            f"task.choice_scoring must be one of {', '.join(SCORINGS)}, got {mode!r}",
            "use task.choice_scoring=likelihood (the default), mean or generate",
        )
    return mode


def flatten(sources: list[list[int]], options: dict[int, list[list[int]]]) -> tuple[list, list, list]:
    """(inputs, targets, owners): one (input, choice) pair per choice of every row in ``options``
    ({row: the token ids of its choices as targets}); ``owners[i]`` is the row of pair ``i``."""
    src, tgt, owners = [], [], []
    for row, choices in options.items():
        for target in choices:
            src.append(sources[row])
            tgt.append(target)
            owners.append(row)
    return src, tgt, owners


def target_log_probs(model, hidden: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(sum, count) per sequence of the log-probabilities of its labelled tokens (``labels`` not IGNORE);
    ``hidden`` is aligned with ``labels`` (the state that predicts each label). Only those positions go
    through the LM head."""
    keep = labels != IGNORE
    rows = keep.nonzero()[:, 0]
    targets = labels[keep]
    log_probs = model.lm_logits(hidden[keep]).float().log_softmax(-1)
    token = log_probs.gather(1, targets[:, None]).squeeze(1)
    sums = torch.zeros(labels.shape[0], device=token.device).index_add_(0, rows, token)
    return sums, keep.sum(1)


def pick(
    sums: torch.Tensor, counts: torch.Tensor, owners: list[int], mode: str
) -> dict[int, tuple[int, list[float]]]:
    """{row: (index of its best choice, every choice's score)}: the summed log-probability (``likelihood``)
    or its mean per token (``mean``); the first of equal scores wins."""
    scores = sums / counts.clamp(min=1) if mode == "mean" else sums
    per_row: dict[int, list[float]] = {}
    for k, row in enumerate(owners):
        per_row.setdefault(row, []).append(float(scores[k]))
    return {row: (max(range(len(s)), key=s.__getitem__), s) for row, s in per_row.items()}
