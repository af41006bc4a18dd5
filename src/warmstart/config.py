"""Typed dataclass configs: YAML presets, dotted overrides, and clear errors for unknown keys.

Each config section is a dataclass whose fields carry a ``help`` string (``opt(default, "help")``); the help
text becomes ``--help``. Values are merged in this order: dataclass defaults, preset YAML, ``--config`` YAML,
command-line flags, then ``key.sub=value`` overrides. The resolved config is saved with every run.
Keys that are fractions by name (``*dropout*``, ``*pdrop``, ``*_prob``, ``*_fraction``, ``*_ratio``) must lie
in [0, 1]; whole-number keys (sizes, layer and head counts, steps, limits, seeds) lie in the range their name
gives them (numbers.py), so that a negative width or a seed torch cannot take is one line when the config is
read, not an error deep in torch; rules special to one key live in its config's ``__post_init__``.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from pathlib import Path
from typing import Any

import yaml

from warmstart.atomic import write_atomic
from warmstart.errors import WarmstartError
from warmstart.numbers import FRACTION, check_values, short
from warmstart.yaml_loader import Loader, load

PRESET_DIR = Path(__file__).parent / "presets"


def opt(default: Any, help: str) -> Any:
    """A dataclass field with a default and a help string (lists and dicts are copied per instance)."""
    if isinstance(default, list | dict):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


def field_help(cls: type, defaults: dict | None = None) -> list[tuple[str, str, Any, str]]:
    """(dotted key, type name, default, help) for every leaf field of a (nested) dataclass type.

    ``defaults`` (a nested dict, e.g. finetuning's DEFAULTS) replaces the dataclass defaults it names: the
    defaults a command really runs with."""
    rows = []
    hints = typing.get_type_hints(cls)
    defaults = defaults or {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            inner = defaults.get(f.name)
            rows += [
                (f"{f.name}.{k}", t, d, h)
                for k, t, d, h in field_help(tp, inner if isinstance(inner, dict) else None)
            ]
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        default = defaults.get(f.name, default)
        rows.append((f.name, _type_name(tp), default, f.metadata.get("help", "")))
    return rows


def _type_name(tp: Any) -> str:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return _type_name(args[0]) + "?"
    if typing.get_origin(tp) is list:
        return f"list[{_type_name(args[0])}]"
    return getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, key: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], key)
    if origin is list:
        items = value if isinstance(value, list) else [value]
        if isinstance(value, str):  # "1,2,3" from the command line: each item read as a YAML scalar
            items = [_scalar(v.strip()) for v in value.split(",") if v.strip()]
        return [_coerce(v, args[0], key) for v in items]
    if tp is Any:
        return value
    if tp is bool and isinstance(value, bool):
        return value
    if tp is float and isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):  # inf/nan would break the weights at the first update
            raise WarmstartError(
                f"config key '{key}' must be a finite number, got {value!r}", "give a number"
            )
        return float(value)
    if tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tp is str and isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    raise WarmstartError(
        f"config key '{key}' expects {_type_name(tp)}, got {short(value)}",
        f"set it like {key}=<{_type_name(tp)}>",
    )


def _scalar(text: str):
    """One command-line item read as a YAML scalar; text that YAML would read as a mapping (or cannot
    read) stays text."""
    try:
        value = load(text)
    except yaml.YAMLError:
        return text
    return text if isinstance(value, dict) else value


def all_keys(cls: type) -> list[str]:
    return [k for k, _, _, _ in field_help(cls)]


# What a transformers (TrainingArguments) user types -> the last part of the same key here (a tuple: the
# names to try in turn, the first one the config has wins).
HF_NAMES: dict[str, str | tuple[str, ...]] = {
    "learning_rate": "lr",
    "num_train_epochs": "epochs",
    "per_device_train_batch_size": "batch_size",
    "train_batch_size": "batch_size",
    "per_device_eval_batch_size": "eval_batch_size",
    "gradient_accumulation_steps": "grad_accum",
    "max_steps": "steps",
    "adam_beta1": "beta1",
    "adam_beta2": "beta2",
    "adam_epsilon": "eps",
    "lr_scheduler_type": "schedule",
    "max_grad_norm": "clip_norm",
    "eval_steps": "eval_every",
    "save_steps": "save_every",
    "logging_steps": "log_every",
    "save_total_limit": "keep_last",
    "early_stopping_patience": "early_stopping",
    "output_dir": "out",
    "model_name_or_path": "init",
    "dataset_name": ("dataset", "corpus"),
    "max_seq_length": ("max_length", "seq_len"),
    "max_length": ("max_length", "seq_len"),
    "max_train_samples": "train_limit",
    "max_eval_samples": "validation_limit",
    "max_predict_samples": "test_limit",
    "torch_compile": "compile",
    "label_smoothing_factor": "label_smoothing",
    "vector_size": "dim",  # gensim's Word2Vec
    "alpha": "lr",
    "lora_r": "lora_rank",
    "target_modules": "lora_targets",
}


def same_setting(key: str, valid: list[str]) -> list[str]:
    """Valid keys of the same setting as ``key``: by its last part (``lr`` -> ``train.lr``) or by its
    transformers name (``learning_rate`` -> ``train.lr``); the typed section first, then train.*."""
    section, _, typed = key.rpartition(".")
    names = HF_NAMES.get(typed, typed)
    for leaf in (names,) if isinstance(names, str) else names:
        same = [k for k in valid if k.rpartition(".")[2] == leaf]
        if same:
            break
    if same and typed in HF_NAMES and any(k.startswith("train.") for k in same):
        same = [k for k in same if k.startswith("train.")]  # a transformers name means its training argument
    same.sort(key=lambda k: (k.rpartition(".")[0] != section, not k.startswith("train."), len(k)))
    return same[:3]


def close_keys(key: str, valid: list[str]) -> list[str]:
    """Valid keys the user probably meant: the same setting (``same_setting``), else close spellings
    (``train.lrr``)."""
    same = same_setting(key, valid)
    if same:
        return same
    scored = sorted(((difflib.SequenceMatcher(None, k, key).ratio(), k) for k in valid), reverse=True)
    best = scored[0][0] if scored else 0.0  # close spellings, but none far behind the closest
    return [k for ratio, k in scored[:3] if ratio >= max(0.5, best - 0.1)]


def unknown_key_error(key: str, valid: list[str]) -> WarmstartError:
    close = close_keys(key, valid)
    hint = f"did you mean {', '.join(close)}?" if close else "see `--help` for the valid keys"
    return WarmstartError(f"unknown config key '{key}'", hint)


def from_dict(cls: type, data: dict | None, prefix: str = "", root: type | None = None) -> Any:
    """Build dataclass ``cls`` from a nested dict; unknown keys raise an error listing close valid keys."""
    data = dict(data or {})
    root = root or cls
    hints = typing.get_type_hints(cls)
    kwargs = {}
    names = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in names:
            raise unknown_key_error(f"{prefix}{key}", all_keys(root))  # YAML keys may be numbers
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        tp, value = hints[f.name], data[f.name]
        if dataclasses.is_dataclass(tp):
            if not isinstance(value, dict):
                raise WarmstartError(
                    f"config section '{prefix}{f.name}' must be a mapping, got {short(value)}"
                )
            kwargs[f.name] = from_dict(tp, value, f"{prefix}{f.name}.", root)
        else:
            kwargs[f.name] = value = _coerce(value, tp, prefix + f.name)
            if FRACTION.search(f.name) and isinstance(value, float) and not 0 <= value <= 1:
                raise WarmstartError(
                    f"config key '{prefix}{f.name}' is a fraction, got {short(value)}",
                    "use a value from 0 to 1",
                )
    cfg = cls(**kwargs)  # its __post_init__ first: a key's own rule says it best
    check_values(cls, kwargs, prefix, nested=False)  # sections: checked by their own from_dict above
    return cfg


def to_dict(cfg: Any) -> dict:
    return dataclasses.asdict(cfg)


def layered(
    *,
    defaults: dict | None = None,
    preset: str | None = None,
    config_file: str | Path | None = None,
    saved: dict | None = None,
    flags: dict | None = None,
    overrides=(),
) -> dict:
    """The settings a user gave, merged in one order everywhere: a command's defaults < a preset < a config
    file < a resumed run's saved config < flags < KEY=VALUE overrides (later wins, key by key). Every command
    resolves its config with this, then validates it with ``from_dict``."""
    explicit = merge({}, defaults or {})
    if preset:
        explicit = merge(explicit, load_preset(preset))
    if config_file:
        explicit = merge(explicit, load_yaml(config_file))
    explicit = merge(explicit, saved or {})
    explicit.pop(WORKDIR, None)  # a run's config.yaml (as --config too) records it; it is not a setting
    explicit = merge(explicit, flags or {})
    for o in overrides:
        explicit = merge(explicit, parse_override(o))
    return explicit


# the working directory a run started in, kept in its config.yaml beside the settings: a --resume from
# another directory reads the run's relative paths (data, tokenizer, init) from there (commands/*.py)
WORKDIR = "workdir"


def merge(base: dict, extra: dict) -> dict:
    """Recursive dict merge; ``extra`` wins."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def parse_override(text: str) -> dict:
    """``train.lr=3e-4`` -> {"train": {"lr": 0.0003}} (values parsed as YAML scalars)."""
    if "=" not in text:
        if Path(text).exists():  # `--train-file a.csv b.csv`: the second file lands among the overrides
            raise WarmstartError(
                f"{text} is a file, not a key.sub=value setting",
                "a file flag takes one file; several as one: a quoted pattern ('data/*.csv')",
            )
        raise WarmstartError(f"cannot read the override '{text}'", "write overrides as key.sub=value")
    key, raw = text.split("=", 1)
    try:
        value = load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    if isinstance(value, dict):  # "task.prefix=headline: " is text, not a mapping
        value = raw
    if isinstance(value, str) and _looks_numeric(value):
        value = float(value)
    node: dict = {}
    cur = node
    parts = key.strip().split(".")
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return node


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def load_yaml(path: str | Path) -> dict:
    """A YAML file of config sections as a dict. Refused in one line naming the line: invalid YAML, a
    ``!!set`` anywhere (a section of keys without values, which would be dropped), a key given twice in one
    mapping (YAML would keep the last without a word), and a document that is not a mapping."""
    path = Path(path)
    if not path.is_file():
        raise WarmstartError(f"no such config file: {path}", "check the --config path")
    try:
        loader = Loader(path.read_text(encoding="utf-8"))
        try:
            node = loader.get_single_node()
            _check_nodes(node, path)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise WarmstartError(f"{path} is not valid YAML{where}", "fix the file's syntax") from None
    except UnicodeDecodeError as e:
        raise WarmstartError(f"{path} is not UTF-8 text (byte {e.start})", "save it as UTF-8") from None
    except RecursionError:
        raise WarmstartError(
            f"{path} is nested too deeply to read", "write it as `section: {key: value}`"
        ) from None
    if data is None:  # an empty file (or only comments)
        return {}
    if not isinstance(data, dict):
        raise WarmstartError(
            f"{path} must hold a mapping of config keys, not {type(data).__name__}",
            "write it as `section: {key: value}`",
        )
    return data


SET_TAG, MERGE_TAG = "tag:yaml.org,2002:set", "tag:yaml.org,2002:merge"


def _check_nodes(root: yaml.Node | None, path: Path) -> None:
    """Refuse a ``!!set`` and a key given twice in one mapping, anywhere under ``root`` (each node once:
    aliases are not walked again)."""
    seen: set[int] = set()
    todo: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    while todo:
        node, where = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        line = node.start_mark.line + 1
        if node.tag == SET_TAG:
            name = f"'{where}'" if where else "the file"
            raise WarmstartError(
                f"{path} line {line}: {name} is a !!set (keys without values), not a mapping of config keys",
                "write it as `section: {key: value}`",
            )
        if isinstance(node, yaml.SequenceNode):
            todo += [(item, f"{where}[{i}]") for i, item in enumerate(node.value)]
        elif isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if key.tag == MERGE_TAG or not isinstance(key, yaml.ScalarNode):  # `<<: *base` is overridable
                    todo.append((value, where))
                    continue
                dotted = f"{where}.{key.value}" if where else key.value
                if (key.tag, key.value) in first:
                    raise WarmstartError(
                        f"{path} line {key.start_mark.line + 1}: the key '{dotted}' is given twice (first at "
                        f"line {first[key.tag, key.value]})",
                        "keep one of them (YAML would keep the last without a word)",
                    )
                first[key.tag, key.value] = key.start_mark.line + 1
                todo.append((value, dotted))


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def load_preset(name: str) -> dict:
    path = PRESET_DIR / f"{name}.yaml"
    if not path.is_file():
        names = preset_names()
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"choose one of: {', '.join(names)}"
        raise WarmstartError(f"unknown preset '{name}'", hint)
    return load_yaml(path)


def save_yaml(data: dict, path: str | Path) -> None:
    """Written atomically: a run killed while saving its config leaves none rather than half of one."""
    write_atomic(path, lambda f: f.write(yaml.safe_dump(data, sort_keys=False)), text=True)


def help_text(cls: type, defaults: dict | None = None, config_file: bool = True) -> str:
    """All config keys with type, default and help, for `--help` (``defaults``: see ``field_help``;
    ``config_file``: whether the command takes ``--config FILE``)."""
    rows = field_help(cls, defaults)
    width = max(len(k) for k, *_ in rows)
    how = "key=value, or in a --config YAML file" if config_file else "key=value"
    lines = [f"config keys (set with {how}):"]
    for key, tp, default, text in rows:
        lines.append(f"  {key:<{width}}  {text} [{tp}, default {default!r}]")
    return "\n".join(lines)
