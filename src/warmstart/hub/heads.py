"""Task heads between warmstart runs and transformers' task classes; each family's heads where they differ
from BERT's (the Task's own ``hf_head``) are in its module of :mod:`warmstart.hub.families`.

A finetuned warmstart run (config.json with ``warmstart.task``) exports as:
- classification -> ``*ForSequenceClassification``. With ``task.pooling=pooler``: BERT, ALBERT: the encoder's
  pooler and ``classifier``; RoBERTa: the pooler becomes ``classifier.dense``, the classifier
  ``classifier.out_proj``, the same dense + tanh + linear on the first token. With ``task.pooling=cls`` (the
  default: a linear layer on the [CLS] state) the family's head is written to compute that linear layer
  (:mod:`warmstart.hub.pooling`: a near-identity pooler, exact to float precision; ELECTRA's gelu head
  exactly). ``mean`` pooling has no transformers head, nor has ELECTRA's head (dense + gelu + out_proj) a
  twin of the pooler (dense + tanh): both are refused.
- tagging -> ``*ForTokenClassification`` (``classifier`` on every token); extractive_qa ->
  ``*ForQuestionAnswering`` (``qa_outputs``; warmstart masks the logits outside the context when decoding).
- multiple_choice -> ``*ForMultipleChoice``; ``task.pooling=pooler``: the pooler in place, the scorer as
  ``classifier`` (ELECTRA: the pooler as ``sequence_summary.summary`` with ``summary_activation=tanh``, and
  only such ELECTRA checkpoints import with their head: the default gelu summary has no warmstart twin);
  ``task.pooling=cls`` as for classification (ELECTRA: a summary without projection, exact).
- on GPT-2, T5 and BART: the family's class (tasks/readers.py, ``HEADS``: GPT2ForSequenceClassification,
  T5ForTokenClassification, BartForQuestionAnswering, ...), whose head the unit holds under its own names;
  ``classifier_dropout`` is the family's dropout that warmstart's head used.
The labels travel as ``id2label`` / ``label2id``. Importing such a checkpoint gives a finetuned run directory
that `warmstart predict` / `evaluate` load, its labels read from ``id2label`` in id order.
"""

from __future__ import annotations

import dataclasses
import warnings

from warmstart.checkpoints.card import checkpoint_config
from warmstart.hub.families.base import Family, refuse
from warmstart.hub.pooling import scaled_pooler
from warmstart.hub.tensors import to_hf_state
from warmstart.registry import TASKS, family, family_of
from warmstart.tasks.base import TaskConfig
from warmstart.tasks.readers import HEADS, head_dropout

WB = ("weight", "bias")
# each task with a transformers head: the suffix of its class (ForSequenceClassification, ...); the tasks
# whose head reads the pooler (tasks/base.py: hf_head, hf_pooled), to which task.pooling applies
TASK_CLASSES = {n: t.hf_architecture.removeprefix("Bert") for n, t in TASKS.items() if t.hf_head}
POOLED = tuple(n for n, t in TASKS.items() if t.hf_head and t.hf_pooled)
PROBLEM_TYPES = {
    "single_label": "single_label_classification",
    "multi_label": "multi_label_classification",
    "regression": "regression",
}


def base_name(fam: Family) -> str:
    """The prefix of the family's transformers classes: Bert, Roberta, Albert or Electra."""
    return fam.hf_class.split("For")[0]


def task_class(fam: Family, task_name: str) -> str:
    """The suffix of the transformers class of the task ``task_name`` in family ``fam``
    (ForTokenClassification)."""
    return fam.task_classes.get(task_name, TASK_CLASSES[task_name])


def _head_names(fam: Family, task: str) -> list[tuple[str, str]]:
    """(warmstart unit name, transformers name) of a task's head tensors in transformers family ``fam``."""
    pairs = fam.task_heads.get(task, TASKS[task].hf_head)
    return [(f"{ours}.{p}", f"{theirs}.{p}") for ours, theirs in pairs for p in WB]


# ---------------------------------------------------------------------------------------------- export
def export_task(name: str, fam: Family, cfg, card, state: dict) -> tuple[str, dict, dict]:
    """(transformers class, tensors, config.json fields) of the finetuned run whose run card is ``card``
    and whose unit tensors are ``state``; a task without a transformers head is refused."""
    task = card.task or {}
    task_name = task.get("name")
    export = _decoder_task if family(fam.arch).model.generates else _encoder_task
    hf_class, tensors, config = export(name, fam, cfg, task, state)
    labels = list(card.labels)
    problem = task.get("problem", "single_label") if task_name == "classification" else "single_label"
    if problem == "regression":
        labels = ["LABEL_0"]
    if labels:
        config["id2label"] = {str(i): x for i, x in enumerate(labels)}
        config.update(label2id={x: i for i, x in enumerate(labels)}, num_labels=len(labels))
    if task_name == "classification":
        config["problem_type"] = PROBLEM_TYPES[problem]
    return hf_class, tensors, config


def _encoder_task(name: str, fam: Family, cfg, task: dict, state: dict) -> tuple[str, dict, dict]:
    task_name = task.get("name")
    refuse(
        task_name not in TASK_CLASSES,
        f"a finetuned {task_name} model of a {name} encoder has no transformers class warmstart exports",
        "export classification, multiple_choice, tagging or extractive_qa runs, or the pretrained run",
    )
    heads, extra, config = _head_names(fam, task_name), {}, {}
    pooling = task.get("pooling", "cls") if task_name in POOLED else None
    refuse(
        pooling not in (None, "cls", "pooler"),
        f"a finetuned {task_name} model with task.pooling={pooling} has no transformers head (transformers' "
        f"*{TASK_CLASSES.get(task_name)} read the first token; none pools the token states)",
        "finetune with task.pooling=cls (the default) or pooler to export it",
    )
    refuse((task_name, pooling) in fam.no_export, *fam.no_export.get((task_name, pooling), ("", "")))
    if pooling == "cls":  # the linear layer on [CLS] in transformers' head of the family (hub/pooling.py)
        state, heads, extra, config = fam.cls_heads.get(task_name, scaled_pooler)(
            task_name, state, heads, cfg
        )
        config = {**fam.head_config.get(task_name, {}), **config}
    elif pooling == "pooler":
        config.update(fam.head_config.get(task_name, {}))
    pooler = task_name in POOLED and not any(
        ours.startswith("encoder.pooler.") for ours, _ in heads
    )  # in place
    tensors = to_hf_state(dataclasses.replace(fam, heads=()), dataclasses.replace(cfg, pooler=pooler), state)
    tensors.update({theirs: state[ours] for ours, theirs in heads})
    tensors.update(extra)
    return base_name(fam) + task_class(fam, task_name), tensors, config


def _decoder_task(name: str, fam: Family, cfg, task: dict, state: dict) -> tuple[str, dict, dict]:
    """A task on a decoder or encoder-decoder (tasks/readers.py): the family's transformers class, its base
    model under that class's prefix (less the stack it lacks: T5ForTokenClassification has no decoder), and
    the unit's head, whose names are transformers' already."""
    task_name, have = task.get("name"), HEADS.get(name, {})
    refuse(task_name not in have,
           f"a finetuned {task_name} model of a {name} model has no transformers class",
           f"export {', '.join(have)} runs of this family, or the pretrained run")  # fmt: skip
    hf_class, prefix, lacks = have[task_name]
    pooling = task.get("pooling", "cls") if task_name == "classification" else "cls"
    refuse(pooling != "cls", f"a finetuned classification model with task.pooling={pooling} has no "
           f"transformers head ({hf_class} reads one token's state)",
           "finetune with task.pooling=cls (the default) to export it")  # fmt: skip
    body = to_hf_state(dataclasses.replace(fam, prefix=prefix, heads=()), cfg, state)
    dropped = tuple(p for p in (lacks, prefix + "lm_head.") if p)
    tensors = {k: v for k, v in body.items() if not k.startswith(dropped)}
    tensors.update({k: v for k, v in state.items() if not k.startswith(fam.unit)})
    return hf_class, tensors, {"classifier_dropout": head_dropout(cfg)}


# ---------------------------------------------------------------------------------------------- import
def import_task(name: str, fam: Family, hf: dict, state: dict, max_positions: int) -> dict | None:
    """The finetuned task of a transformers task checkpoint: {"task": TaskConfig fields, "labels",
    "tensors": head tensors under unit names}, its head tensors taken out of ``state`` (RoBERTa's
    classifier.dense put back as the pooler; ELECTRA's multiple-choice summary as the pooler, "pooler" then
    true); None when it is no task class warmstart has a head for."""
    arch = next(iter(hf.get("architectures") or []), "")
    task_name = next((k for k in TASK_CLASSES if arch.endswith(task_class(fam, k))), None)
    check = fam.has_head
    if (
        task_name is None
        or family(fam.arch).model.generates
        or (check is not None and not check(task_name, hf))
    ):
        return None  # its head is dropped with a warning: the encoder imports as a pretrained model
    heads = _head_names(fam, task_name)
    lost = [theirs for _, theirs in heads if theirs not in state]
    refuse(bool(lost), f"the {arch} checkpoint lacks its head weights {', '.join(lost)}",
           "pass the directory save_pretrained wrote")  # fmt: skip
    tensors = {}
    for ours, theirs in heads:
        if ours.startswith("encoder.pooler.") and fam.pooler_in_base:
            state[f"{fam.prefix}pooler.dense.{ours.rsplit('.', 1)[1]}"] = state.pop(theirs)
        else:  # ELECTRA's summary: the pooler its base model has not
            tensors[ours] = state.pop(theirs)
    length = min(128, max_positions)
    task = {"name": task_name, "max_length": length, "doc_stride": min(64, length // 2)}
    if "classifier.weight" not in tensors:  # no labels: extractive QA, multiple choice
        task.update({"pooling": "pooler"} if task_name in POOLED else {})
        pooler = any(k.startswith("encoder.pooler.") for k in tensors)
        return {"task": task, "labels": [], "tensors": tensors, "pooler": pooler}
    n = tensors["classifier.weight"].shape[0]
    id2label = {str(k): v for k, v in (hf.get("id2label") or {}).items()}
    labels = [str(id2label.get(str(i), f"LABEL_{i}")) for i in range(n)]
    if task_name == "classification":
        problems = {v: k for k, v in PROBLEM_TYPES.items()}
        problem = problems.get(hf.get("problem_type"), "regression" if n == 1 else "single_label")
        task.update(problem=problem, pooling="pooler")
        labels = [] if problem == "regression" else labels
    pooler = any(k.startswith("encoder.pooler.") for k in tensors)  # XLNet's summary: a pooler it adds
    return {"task": task, "labels": labels, "tensors": tensors, "pooler": pooler}


def task_unit(spec: dict, encoder, tokenizer, config_json: dict):
    """(unit, config.json) of an imported task: the task's head on ``encoder`` and the finetuned model's
    config.json (task, labels, id2label), as `warmstart finetune` writes them."""

    task = TASKS[spec["task"]["name"]](TaskConfig(**spec["task"]))
    task.bind(tokenizer, config_json, family_of(config_json))
    return task.build(encoder, spec["labels"]), checkpoint_config(config_json, task, spec["labels"])


def warn_heads(src, fam: Family, fresh: list, dropped: list, finetuned: bool) -> None:
    """Warn about the pretraining heads an import starts fresh (none for a finetuned model), and the task
    heads it drops."""
    fresh = [] if finetuned else [f for f in fresh if not f.endswith("final_logits_bias")]
    if fresh:
        where = ", ".join(dict.fromkeys(theirs.split(".")[0] + ".*" for _, theirs in fam.heads))
        what = {"electra": "discriminator", "mlm": "masked-LM"}.get(fam.objective, "pretraining") + " head"
        warnings.warn(f"{src} has no {what} ({where}): the head starts fresh", stacklevel=3)
    if fam.fresh and not finetuned:
        warnings.warn(f"{src}: {fam.hf_class} checkpoints hold no generator: it starts fresh", stacklevel=3)
    if dropped:
        heads = sorted({k.rsplit(".", 1)[0] for k in dropped})
        warnings.warn(f"{src}: task heads not imported: {', '.join(heads[:4])}", stacklevel=3)


def export_family(card, cfg, algorithm: str) -> str:
    """The transformers family of a warmstart run: its own (gpt2, t5, bart), the one it was imported from,
    else for the encoder electra (the objective), albert (shared layers or factorized embeddings), roberta
    (no segments and a byte-level BPE tokenizer) or bert."""
    if card.arch != "bert":
        return card.arch
    if card.hf_model_type in ("bert", "roberta", "albert", "electra"):
        return card.hf_model_type
    if card.objective == "electra":
        return "electra"
    if cfg.share_layers or cfg.embedding_size not in (None, cfg.hidden_size):
        return "albert"
    return "roberta" if cfg.type_vocab_size == 1 and algorithm == "bpe" else "bert"
