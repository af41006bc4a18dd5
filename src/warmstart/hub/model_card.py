"""OUT/README.md of `warmstart export`: a Hugging Face hub model card written only from what the run records.

The YAML front matter is :mod:`warmstart.hub.card_front` (library_name, base_model, license, datasets,
pipeline_tag, tags, metrics, model-index). Then a short card for people: what the model is, how it was
trained (one table: init, data, task, strategy, epochs and steps, lr, batch size, seeds), the test metrics
(test_metrics.json, and the seeds' spread from summary.json for one seed of several), the labels and how the
head was written where it is not transformers' own (:mod:`warmstart.hub.pooling`), how to load it in
transformers and in warmstart, and the run's full config.yaml in a collapsed ``<details>`` section. No path
of the exporting machine appears: runs, checkpoints and files are named by name
(:mod:`warmstart.hub.card_names`).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from warmstart.hub.card_front import Front, front_matter, pipeline_tag, render
from warmstart.hub.card_names import dataset_name, datasets, public, shown, sources, test_source
from warmstart.hub.origin import origin
from warmstart.hub.runs import SEED, Chosen
from warmstart.registry import TASKS

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
EXAMPLES = {  # pipeline -> (the call's input, its keywords)
    "text-classification": ('"a text to classify"', ", top_k=None, truncation=True"),
    "token-classification": ('"A sentence to tag."', ', aggregation_strategy="simple"'),
    "question-answering": ('question="Who wrote it?", context="It was written by Ada."', ""),
    "fill-mask": ('f"Paris is the {fill.tokenizer.mask_token} of France."', ""),
    "text-generation": ('"Once upon a time"', ", max_new_tokens=20"),
    "text2text-generation": ('"a text to rewrite"', ", max_new_tokens=20"),
}
WARMSTART = {  # a pretrained model's pipeline -> the warmstart call (a task's: its Task's ``example``)
    "fill-mask": 'model.fill_mask("Paris is the [MASK] of France.")',
    "text-generation": 'model.generate("Once upon a time", max_new_tokens=20)',
}


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _number(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def _task_name(task: dict) -> str:
    name = task.get("name", "classification")
    return f"classification ({task.get('problem', 'single_label')})" if name == "classification" else name


def _seeds(config: dict, root: Path | None) -> str:
    seeds = [str(s) for s in config.get("seeds") or []]
    if root is not None and SEED.fullmatch(root.name) and len(seeds) > 1:
        return f"{root.name.removeprefix('seed-')} (one of {', '.join(seeds)})"
    return ", ".join(seeds) or str((config.get("train") or {}).get("seed", ""))


def _training(config: dict, scores: dict, root: Path | None, base: str | None, task: dict | None) -> list:
    data, train, strategy = config.get("data") or {}, config.get("train") or {}, config.get("strategy") or {}
    init = config.get("init")
    rows = [("init", f"`{shown(init)}`" + (f", from {base}" if base else "")) if init else None]
    names = list(dict.fromkeys(f"`{dataset_name(v)[0]}`" for v in sources(config)))
    names = names or ([f"token shards `{shown(data['shards'])}`"] if data.get("shards") else [])
    sizes = ", ".join(f"{n} {s}" for s, n in (scores.get("sizes") or {}).items())
    rows.append(("data", ", ".join(names) + (f" ({sizes} examples)" if sizes else "")))
    if task:
        rows.append(("task", f"{_task_name(task)}, at most {task.get('max_length')} tokens"))
        method = strategy.get("strategy")
        if method == "lora":
            targets = ", ".join(strategy.get("lora_targets") or [])
            method += f" (rank {strategy.get('lora_rank')}, alpha {strategy.get('lora_alpha')}, on {targets})"
        rows.append(("strategy", method))
        steps = scores.get("steps", train.get("steps"))
        rows.append(("epochs, steps", f"{config.get('epochs')}, {steps}"))
    else:
        rows += [("objective", config.get("objective")), ("steps", train.get("steps"))]
        rows.append(("sequence length", data.get("seq_len")))
    rows += [("learning rate", train.get("lr")), ("batch size", train.get("batch_size"))]
    rows.append(("seeds" if task else "seed", _seeds(config, root) if task else train.get("seed")))
    kept = [r for r in rows if r is not None and r[1] not in (None, "")]
    return ["## Training", "", "| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in kept], ""]


def _results(chosen: Chosen, scores: dict, best: dict) -> list[str]:
    lines, is_best = [], chosen.path.name == "best"
    if scores.get("test"):
        whose = "this checkpoint" if is_best else f"the run's best/ (step {scores.get('best_step')})"
        lines += ["## Results", "", f"Test split, scored on {whose}:", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {_number(v)} |" for k, v in scores["test"].items() if isinstance(v, int | float)]
    spread = (
        _json(chosen.root.parent / "summary.json") if chosen.root and SEED.fullmatch(chosen.root.name) else {}
    )
    if spread.get("metrics"):
        shown_ = "; ".join(f"{k} {m['mean']:.4f} ± {m['std']:.4f}" for k, m in spread["metrics"].items())
        lines += ["", f"Over the run's {len(spread.get('seeds') or [])} seeds (mean ± std): {shown_}"]
    if best and is_best:
        lines += [] if lines else ["## Results"]
        value = f"{best.get('metric')} {_number(best.get('value'))} at step {best.get('step')}"
        lines += ["", f"Chosen by validation {value}."]
    return lines + ([""] if lines else [])


def _task_lines(task: dict, hf_config: dict) -> list[str]:
    lines = ["## Labels and head", ""]
    labels = hf_config.get("id2label") or {}
    if labels and task.get("problem") != "regression":
        lines += ["Labels: " + ", ".join(f"{i} = `{x}`" for i, x in labels.items()), ""]
    if "warmstart_head" in hf_config:
        lines += [f"Head: {hf_config['warmstart_head']}", ""]
    elif "pooling" in task and task.get("name") in TASKS and TASKS[task["name"]].hf_pooled:
        lines += [f"Head: transformers' own, on task.pooling={task['pooling']}.", ""]
    return lines if len(lines) > 2 else []


def _usage(hf_config: dict, tag: str | None, what: str, name: str, pairs: bool, adapter: bool) -> list[str]:
    cls = next(iter(hf_config.get("architectures") or ["Model"]))
    auto = next((a for suffix, a in AUTO.items() if cls.endswith(suffix)), "AutoModel")
    lines = ["## Use", "", f"`{name}` below is this directory, or its hub id once uploaded.", "",
             "```python", f"from transformers import AutoTokenizer, {auto}", "",
             f"tokenizer = AutoTokenizer.from_pretrained({name!r})",
             f"model = {auto}.from_pretrained({name!r})"]  # fmt: skip
    if tag in EXAMPLES:
        given, keywords = EXAMPLES[tag]
        if pairs and tag == "text-classification":
            given = '{"text": "first text", "text_pair": "second text"}'
        var = "fill" if tag == "fill-mask" else "pipe"
        lines += ["", "from transformers import pipeline", "", f"{var} = pipeline({tag!r}, model={name!r})",
                  f"{var}({given}{keywords})"]  # fmt: skip
    if adapter:
        lines += ["", "# the LoRA adapters alone, on the --init model (base/) with the same head",
                  "from peft import PeftModel", "", f"base = {auto}.from_pretrained({name + '/base'!r})",
                  f"model = PeftModel.from_pretrained(base, {name + '/adapter'!r})"]  # fmt: skip
    example = TASKS[what].example if what in TASKS else ""
    call = example or WARMSTART.get(tag or "") or 'model.encode(["a sentence"])'
    lines += ["```", "", "In warmstart (the directory is imported once):", "", "```python",
              "import warmstart", "", f"model = warmstart.load({name!r})", call, "```", ""]  # fmt: skip
    return lines


def _details(config: dict, command: str) -> list[str]:
    text = yaml.safe_dump(public(config), sort_keys=False, allow_unicode=True).rstrip()
    again = f"`warmstart {command} --config config.yaml` with --init and the data pointed at your copies"
    return ["<details>", f"<summary>The run's full config.yaml (paths shown by name; {again})</summary>", "",
            "```yaml", text, "```", "", "</details>", ""]  # fmt: skip


def model_card(chosen: Chosen, hf_config: dict, card, config: dict, out: Path, adapter: bool) -> str:
    """The README.md of an export of ``chosen`` (config: the run's config.yaml as a dict, or {})."""
    root, task = chosen.root, card.task
    scores = _json(root / "test_metrics.json") if root else {}
    best = _json(chosen.path / "best.json")
    family = hf_config.get("model_type", card.arch)
    what = (task or {}).get("name", "classification") if task else (card.objective or "")
    tag = pipeline_tag(family, task, card.objective)
    base = origin(card, config)
    source = test_source(config)
    front = Front(out.name, family, what, tag, base.base_model, base.license, datasets(config),
                  scores.get("test") or {}, dataset_name(source) if source else None,
                  _task_name(task) if task else what)  # fmt: skip
    cls = next(iter(hf_config.get("architectures") or [family]))
    made = f"finetuned by warmstart for {_task_name(task)}" if task else "pretrained by warmstart"
    made += f" ({what})" if what and not task else ""
    which = f" ({chosen.name}: {chosen.reason})" if chosen.name else ""
    lines = [render(front_matter(front)), f"# {out.name}", "",
             f"A {cls} {made}, exported by `warmstart export` from `{shown(chosen.path)}`"
             f"{which}.", ""]  # fmt: skip
    if config:
        lines += _training(config, scores, root, base.base_model, task)
    lines += _results(chosen, scores, best)
    lines += _task_lines(task, hf_config) if task else []
    pairs = bool((config.get("data") or {}).get("text_pair_column"))
    lines += _usage(hf_config, tag, what, out.name, pairs, adapter)
    if config:
        lines += _details(config, "finetune" if task else "pretrain")
    return "\n".join(lines)
