"""A task head on the raw [CLS] state (``task.pooling=cls``, the default) as transformers' task heads.

warmstart's default classifier and multiple-choice scorer are one linear layer on the last layer's first
token, ``W h + b``. transformers has no such head; each family's is written so that it computes the same:

- BERT, ALBERT (the pooler, then the classifier) and RoBERTa (``classifier.dense`` + tanh + ``out_proj``) run
  ``tanh(W_p h + b_p)`` before the linear layer. Export writes ``W_p = s I``, ``b_p = 0`` and the classifier
  ``W / s`` with ``s = POOLER_SCALE = 2**-13`` (about 1.2e-4): ``tanh(s h) / s = h (1 - s^2 h^2 / 3 + ...)``,
  a relative error of 5e-9 h^2 (below 2e-6 for |h| < 20; the hidden states of a post-LayerNorm encoder are a
  few units), and a power of two makes ``s h`` and ``W / s`` exact in floating point. Measured on real text:
  the real MiniLM finetuned on rotten-tomatoes (max |h| 6.1), probabilities within 1.8e-7 of warmstart's;
  tiny runs of every family, logits within 2.4e-6, as close as ELECTRA's exact routes below (3.1e-6: float32
  noise of two implementations); the [CLS] states blown up to |h| = 22 / 45, logits within 4e-6 / 1.1e-5.
  The exported pooler is then this near-identity, not the pretrained pooler (which the cls head never read).
  In float16 ``s`` is a normal number; ``W / s`` overflows float16 only for classifier weights above 8
  (bfloat16 and float32: never).
- ELECTRA's classifier (:mod:`warmstart.hub.families.electra`) runs ``out_proj(gelu(dense(h)))``, and
  ``gelu(x) - gelu(-x) = x`` exactly. Export writes ``dense`` = ``[W; -W; 0]`` with bias ``[b; -b; 0]`` and
  ``out_proj`` = ``[I, -I, 0]`` with bias 0: the head computes ``W h + b`` up to float rounding. ``dense`` is
  hidden_size wide, so this needs 2 x labels <= hidden_size; more labels are refused.
- ELECTRA's multiple-choice summary is configurable: ``summary_use_proj=false`` with
  ``summary_activation=linear`` (the identity) is the first token itself, the scorer then ``classifier``:
  exact.

Mean pooling (``task.pooling=mean``) has no transformers head at all and is refused where export is asked for.
"""

from __future__ import annotations

import torch

POOLER_SCALE = 2.0**-13
HEAD = {"classification": "classifier", "multiple_choice": "scorer"}  # the warmstart head of each pooled task
NOTE = (
    "task.pooling=cls (a linear layer on the last [CLS] state) written as transformers' head: {how}. "
    "Probabilities equal warmstart's to float precision (about 1e-7)."
)


def scaled_pooler(task_name: str, state: dict, heads: list, cfg) -> tuple[dict, list, dict, dict]:
    """(unit tensors, (unit name, transformers name) head pairs, further transformers tensors, config.json
    fields) of a ``task_name`` head on the [CLS] state as a pooler head, to be exported as
    ``task.pooling=pooler`` is: the pooler as ``s I`` (tanh(s h) / s = h to float precision) and the linear
    layer divided by ``s``. The default of every family (``Family.cls_heads``: ELECTRA's own)."""
    head, size = HEAD[task_name], cfg.hidden_size
    weight = state[f"{head}.weight"]
    eye = torch.eye(size, dtype=weight.dtype)
    state = {
        **state,
        "encoder.pooler.weight": eye * POOLER_SCALE,
        "encoder.pooler.bias": eye[0] * 0,
        f"{head}.weight": weight / POOLER_SCALE,
    }
    how = (
        f"the pooler dense layer is {POOLER_SCALE:g} x identity with bias 0 and the classifier weight is "
        f"warmstart's divided by {POOLER_SCALE:g}, so tanh(pooler([CLS])) / {POOLER_SCALE:g} = [CLS] up to "
        "a relative 5e-9 x [CLS]^2"
    )
    return state, heads, {}, {"warmstart_head": NOTE.format(how=how)}
