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
- ELECTRA's classifier runs ``out_proj(gelu(dense(h)))``, and ``gelu(x) - gelu(-x) = x`` exactly. Export
  writes ``dense`` = ``[W; -W; 0]`` with bias ``[b; -b; 0]`` and ``out_proj`` = ``[I, -I, 0]`` with bias 0:
  the head computes ``W h + b`` up to float rounding. ``dense`` is hidden_size wide, so this needs
  2 x labels <= hidden_size; more labels are refused.
- ELECTRA's multiple-choice summary is configurable: ``summary_use_proj=false`` with
  ``summary_activation=linear`` (the identity) is the first token itself, the scorer then ``classifier``:
  exact.

Mean pooling (``task.pooling=mean``) has no transformers head at all and is refused where export is asked for.
"""

from __future__ import annotations

import torch

from warmstart.hub.families import refuse

POOLER_SCALE = 2.0**-13
HEAD = {"classification": "classifier", "multiple_choice": "scorer"}  # the warmstart head of each pooled task
NOTE = (
    "task.pooling=cls (a linear layer on the last [CLS] state) written as transformers' head: {how}. "
    "Probabilities equal warmstart's to float precision (about 1e-7)."
)


def _scaled_pooler(name: str, kind: str, state: dict, heads: list, cfg) -> tuple:
    """The pooler as ``s I`` (tanh(s h) / s = h to float precision) and the linear layer divided by ``s``."""
    head, size = HEAD[kind], cfg.hidden_size
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


def _electra_classifier(name: str, kind: str, state: dict, heads: list, cfg) -> tuple:
    """ELECTRA's dense + gelu + out_proj as ``W h + b`` exactly: gelu(x) - gelu(-x) = x."""
    weight, bias = state["classifier.weight"], state["classifier.bias"]
    labels, size = weight.shape
    refuse(
        2 * labels > size,
        f"an ELECTRA classifier of {labels} outputs has no exact transformers head at hidden_size {size}: "
        "ElectraForSequenceClassification's dense layer is hidden_size wide, the export needs 2 per output",
        "finetune it from a bert, roberta or albert model (their heads take any number of labels)",
    )
    dense, dense_bias = weight.new_zeros(size, size), bias.new_zeros(size)
    dense[:labels], dense[labels : 2 * labels] = weight, -weight
    dense_bias[:labels], dense_bias[labels : 2 * labels] = bias, -bias
    eye = torch.eye(labels, dtype=weight.dtype)
    out = weight.new_zeros(labels, size)
    out[:, :labels], out[:, labels : 2 * labels] = eye, -eye
    tensors = {
        "classifier.dense.weight": dense,
        "classifier.dense.bias": dense_bias,
        "classifier.out_proj.weight": out,
        "classifier.out_proj.bias": bias.new_zeros(labels),
    }
    how = (
        "classifier.dense is [W; -W; 0] with bias [b; -b; 0] and classifier.out_proj is [I, -I, 0] with "
        "bias 0, so out_proj(gelu(dense(h))) = gelu(W h + b) - gelu(-(W h + b)) = W h + b"
    )
    return state, [], tensors, {"warmstart_head": NOTE.format(how=how)}


def _electra_summary(name: str, kind: str, state: dict, heads: list, cfg) -> tuple:
    """ELECTRA's sequence summary without projection or activation: the first token itself."""
    config = {"summary_type": "first", "summary_use_proj": False, "summary_activation": "linear"}
    how = (
        "sequence_summary takes the first token with no projection and a linear (identity) activation: exact"
    )
    scorer = [(ours, theirs) for ours, theirs in heads if not ours.startswith("encoder.pooler.")]
    return state, scorer, {}, {**config, "warmstart_head": NOTE.format(how=how)}


CLS_HEADS = {
    ("electra", "classification"): _electra_classifier,
    ("electra", "multiple_choice"): _electra_summary,
}


def cls_head(name: str, kind: str, state: dict, heads: list, cfg) -> tuple[dict, list, dict, dict]:
    """(unit tensors, (unit name, transformers name) head pairs, further transformers tensors, config.json
    fields) of a ``kind`` head on the [CLS] state in transformers family ``name`` (module docstring). The
    default rewrites the head as a pooler head, to be exported as ``task.pooling=pooler`` is."""
    return CLS_HEADS.get((name, kind), _scaled_pooler)(name, kind, state, heads, cfg)
