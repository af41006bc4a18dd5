"""OUT/README.md of `warmstart export`: a Hugging Face model card written only from what the run records.

YAML front matter (``library_name: transformers``, ``pipeline_tag`` of the task, ``tags``, ``datasets`` for a
hub dataset; no ``language``: a run does not record one), then which checkpoint this is and why, the task and
its labels, how it was trained (the run's config.yaml: --init, data, strategy, steps, and the file itself),
the metrics the run wrote (test_metrics.json, best.json), how the head was written where it is not
transformers' own (:mod:`warmstart.hub.pooling`), and a short usage snippet.
"""

from __future__ import annotations

import json
from pathlib import Path

from warmstart.hub.runs import Chosen, config_file

PIPELINES = {"classification": "text-classification", "tagging": "token-classification",
             "extractive_qa": "question-answering", "multiple_choice": "multiple-choice"}  # fmt: skip
PRETRAINED = {"mlm": "fill-mask", "gpt2": "text-generation", "t5": "text2text-generation",
              "bart": "text2text-generation"}  # fmt: skip
AUTO = {  # transformers class suffix -> the Auto class that loads it
    "ForSequenceClassification": "AutoModelForSequenceClassification",
    "ForTokenClassification": "AutoModelForTokenClassification",
    "ForQuestionAnswering": "AutoModelForQuestionAnswering",
    "ForMultipleChoice": "AutoModelForMultipleChoice",
    "ForMaskedLM": "AutoModelForMaskedLM",
    "ForPreTraining": "AutoModelForPreTraining",
    "LMHeadModel": "AutoModelForCausalLM",
    "ForConditionalGeneration": "AutoModelForSeq2SeqLM",
    "Model": "AutoModel",
}


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _number(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def _front(hf_config: dict, task: dict | None, objective: str | None, dataset: str) -> list[str]:
    arch = hf_config.get("model_type", "")
    tag = PIPELINES.get(task.get("name")) if task else PRETRAINED.get(arch, PRETRAINED.get(objective or ""))
    lines = ["---", "library_name: transformers"] + ([f"pipeline_tag: {tag}"] if tag else [])
    lines += ["tags:", "- warmstart", f"- {arch}"]
    if dataset.startswith("hf:"):
        lines += ["datasets:", f"- {dataset.removeprefix('hf:')}"]
    return lines + ["---", ""]


def _task_lines(task: dict, hf_config: dict) -> list[str]:
    kind = task.get("name")
    what = {"classification": f"classification ({task.get('problem', 'single_label')})"}.get(kind, kind)
    lines = ["## Task", "", f"{what}, inputs of at most {task.get('max_length')} tokens"]
    if "pooling" in task and kind in ("classification", "multiple_choice"):
        lines[-1] += f", head on task.pooling={task['pooling']}"
    labels = hf_config.get("id2label") or {}
    if labels and task.get("problem") != "regression":
        lines += ["", "Labels: " + ", ".join(f"{i} = `{x}`" for i, x in labels.items())]
    if "warmstart_head" in hf_config:
        lines += ["", f"Head: {hf_config['warmstart_head']}"]
    return lines + [""]


def _training(config: dict, sizes: dict, root: Path, command: str) -> list[str]:
    data, strategy, train = config.get("data") or {}, config.get("strategy") or {}, config.get("train") or {}
    lines = ["## Training", ""]
    if config.get("init"):
        lines.append(f"- pretrained model (`--init`): `{config['init']}`")
    if data.get("dataset"):
        counts = ", ".join(f"{n} {s}" for s, n in sizes.items())
        lines.append(f"- data: `{data['dataset']}`" + (f" ({counts} examples)" if counts else ""))
    if strategy.get("strategy"):
        extra = ""
        if strategy["strategy"] == "lora":
            targets = ", ".join(strategy.get("lora_targets") or [])
            extra = f" (rank {strategy.get('lora_rank')}, alpha {strategy.get('lora_alpha')}, on {targets})"
        lines.append(f"- strategy: {strategy['strategy']}{extra}")
    if train:
        size, lr, seed = train.get("batch_size"), train.get("lr"), train.get("seed")
        lines.append(f"- {train.get('steps')} steps, batch size {size}, lr {lr}, seed {seed}")
    path = config_file(root)
    text = path.read_text(encoding="utf-8").rstrip()
    again = f"`warmstart {command} --config {path.name} --out NEW_DIR` trains it again"
    return [*lines, "", f"The run's {path.name} ({again}):", "", "```yaml", text, "```", ""]


def _metrics(chosen: Chosen, scores: dict, best: dict) -> list[str]:
    lines, is_best = [], chosen.path.name == "best"
    if scores.get("test"):
        step = scores.get("best_step")
        whose = "this checkpoint" if is_best else f"RUN/best (step {step}), not this checkpoint"
        lines += ["## Metrics", "", f"Test split, from test_metrics.json (scored on {whose}):", "",
                  "| metric | value |", "|---|---|"]  # fmt: skip
        lines += [f"| {k} | {_number(v)} |" for k, v in scores["test"].items()]
    if best and is_best:
        lines += [] if lines else ["## Metrics"]
        value = f"{best.get('metric')}: {_number(best.get('value'))} at step {best.get('step')}"
        lines += ["", f"Validation {value} (best.json: the step this checkpoint was selected at)"]
    return lines + ([""] if lines else [])


def _usage(hf_config: dict, task: dict | None, out: Path, pairs: bool, adapter: bool) -> list[str]:
    cls = next(iter(hf_config.get("architectures") or ["Model"]))
    auto = next((a for suffix, a in AUTO.items() if cls.endswith(suffix)), "AutoModel")
    path = str(out)
    lines = ["## Use", "", "```python", f"from transformers import AutoTokenizer, {auto}", "",
             f"tokenizer = AutoTokenizer.from_pretrained({path!r})",
             f"model = {auto}.from_pretrained({path!r})"]  # fmt: skip
    if task and task.get("name") == "classification":
        example = '{"text": "first text", "text_pair": "second text"}' if pairs else '"a text to classify"'
        lines += ["", "from transformers import pipeline", "",
                  f"classify = pipeline('text-classification', model={path!r})",
                  f"classify({example}, top_k=None, truncation=True)"]  # fmt: skip
    if adapter:
        lines += [
            "",
            "# the LoRA adapters alone, on the --init model (base/) with the same head",
            "from peft import PeftModel",
            "",
            f"base = {auto}.from_pretrained({str(out / 'base')!r})",
            f"model = PeftModel.from_pretrained(base, {str(out / 'adapter')!r})",
        ]
    return lines + ["```", ""]


def model_card(chosen: Chosen, hf_config: dict, card, config: dict, out: Path, adapter: bool) -> str:
    """The README.md of an export of ``chosen`` (config: the run's config.yaml as a dict, or {})."""
    root = chosen.root
    scores = _json(root / "test_metrics.json") if root else {}
    best = _json(chosen.path / "best.json")
    data = config.get("data") or {}
    dataset = str(data.get("dataset") or "")
    cls = next(iter(hf_config.get("architectures") or [""]))
    lines = _front(hf_config, card.task, card.objective, dataset)
    which = f" ({chosen.name}: {chosen.reason})" if chosen.name else ""
    lines += [f"# {out.name}", "", f"A {cls} exported by `warmstart export` from `{chosen.path}`{which}.", ""]
    if card.task:
        lines += _task_lines(card.task, hf_config)
    elif card.objective:
        lines += [f"A pretrained model: objective {card.objective}.", ""]
    if config and config_file(root) is not None:
        lines += _training(config, scores.get("sizes") or {}, root, "finetune" if card.task else "pretrain")
    lines += _metrics(chosen, scores, best)
    lines += _usage(hf_config, card.task, out, bool(data.get("text_pair_column")), adapter)
    return "\n".join(lines)
