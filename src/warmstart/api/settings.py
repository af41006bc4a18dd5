"""Keyword arguments as the commands' settings: the same keys as the CLI's ``key.sub=value`` and config
files.

- The common settings are typed keywords (``lr=3e-5``, ``epochs=3``, ``batch_size=16``...): ``KEYWORDS``
  below is the one table of which config key each sets, per command.
- A section is a dict or its dataclass (``train=dict(clip_norm=0.5)``, ``train=TrainConfig(clip_norm=0.5)``:
  api/configs.py says which fields of an instance count), a top-level key a value (``evals_per_epoch=2``).
- Any setting may also come as a dotted string among the positional arguments (``"train.lr=1e-4"``), read
  exactly as on the command line.
- ``task="tagging"`` is ``task.name``, ``strategy="lora"`` is ``strategy.strategy``.

A keyword and a nested form of the same key in one call (``lr=1e-4, train=dict(lr=2e-4)``) is an error
naming both; a keyword the command does not know is an error naming the keywords it probably meant."""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Iterable
from typing import Any

from warmstart import config as C
from warmstart.api.configs import plain
from warmstart.data.options import COLUMNS
from warmstart.errors import WarmstartError

MAIN_KEY = {"task": "name", "strategy": "strategy"}

_TRAIN = ["lr", "batch_size", "device", "bf16", "fp16", "warmup_ratio", "weight_decay", "grad_accum",
          "eval_every", "early_stopping", "steps", "report_to", "metric_for_best_model", "greater_is_better",
          "gradient_checkpointing"]  # fmt: skip

# typed keyword -> the config key it sets, per command (the one place this mapping lives). A finetune runs
# once per entry of ``seeds`` with that seed (train.seed is replaced), so its ``seed=5`` is ``seeds=[5]``.
KEYWORDS: dict[str, dict[str, str]] = {
    "finetune": {
        **{k: f"train.{k}" for k in _TRAIN},
        "epochs": "epochs",
        "max_length": "task.max_length",
        "seeds": "seeds",
        "seed": "seeds",
        "task": "task.name",
        "strategy": "strategy.strategy",
        **{k: f"data.{k}" for k in COLUMNS},
    },
    "pretrain": {
        **{k: f"train.{k}" for k in _TRAIN},
        "max_length": "data.seq_len",
        "seed": "train.seed",
        "text_column": "data.text_column",
    },
}


class UnknownKeyword(WarmstartError, TypeError):
    """A keyword argument the function does not take (a TypeError too, as Python raises for one)."""


def keyword_of(command: str, key: str) -> str | None:
    """The typed keyword that sets config ``key`` (``train.lr`` -> ``lr``), if any."""
    names = [name for name, target in KEYWORDS.get(command, {}).items() if target == key]
    return min(names, key=lambda n: n != key.rpartition(".")[2]) if names else None  # seeds, not seed


def python_key(key: str, value: str | None = None, command: str = "") -> str:
    """A dotted config key as a Python keyword: ``train.lr`` -> ``lr=...`` (a typed keyword),
    ``train.clip_norm`` -> ``train=dict(clip_norm=...)``; ``value`` (as written) instead of ``...``."""
    shown = "..." if value is None else value
    typed = keyword_of(command, key)
    if typed is not None:
        return f"{typed}={shown}"
    parts = key.split(".")
    text = f"{parts[-1]}={shown}"
    for part in reversed(parts[:-1]):
        text = f"{part}=dict({text})"
    return text


def command_flags(command: str, typed: dict, sections: dict, dotted: Iterable[str]) -> tuple[dict, list[str]]:
    """(nested settings, KEY=VALUE overrides) of one call: ``typed`` keywords (None left out) set the keys
    of ``KEYWORDS[command]``, ``sections`` are top-level keys and sections (dicts or dataclasses)."""
    flags, overrides = settings(sections, dotted)
    nested = flags  # what the sections say, before the keywords
    given_dotted = {o.split("=", 1)[0].strip(): o for o in overrides}
    table = KEYWORDS[command]
    for name, value in typed.items():
        if value is None:
            continue
        key = table[name]
        if name == "seed" and key == "seeds":
            if typed.get("seeds") is not None:
                raise WarmstartError(
                    f"seed={value} and seeds={typed['seeds']} both given", "give one of them"
                )
            value = [value]
        _refuse_twice(name, value, key, nested, given_dotted)
        flags = C.merge(flags, _nested(key, _plain(value)))
    return flags, overrides


def _nested(key: str, value: Any) -> dict:
    node: dict = {}
    cur = node
    parts = key.split(".")
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return node


def _refuse_twice(name: str, value: Any, key: str, nested: dict, given_dotted: dict) -> None:
    """A typed keyword and a nested form of its key in one call: an error naming both."""
    section, _, leaf = key.rpartition(".")
    node = nested.get(section) if section else None
    if isinstance(node, dict) and leaf in node:
        raise WarmstartError(
            f"{name}={value!r} and {section}=dict({leaf}={node[leaf]!r}) set the same setting",
            f"give one of them: {name}=... or {section}=dict({leaf}=...)",
        )
    if key in given_dotted:
        raise WarmstartError(
            f"{name}={value!r} and the positional setting {given_dotted[key]!r} set the same setting",
            f"give one of them: {name}=... or {given_dotted[key].split('=', 1)[0]!r}",
        )


def check_keywords(function: str, given: Iterable[str], taken: Iterable[str], config_cls: type) -> None:
    """Refuse keywords that are neither ``taken`` by ``function`` nor a top-level key of ``config_cls``,
    naming the keywords (or section keys) the user probably meant."""
    taken = set(taken)
    top = {f.name for f in dataclasses.fields(config_cls)}
    for name in given:
        if name in taken or name in top:
            continue
        raise UnknownKeyword(
            f"warmstart.{function}() got an unknown keyword {name}=",
            _did_you_mean(function, name, sorted(taken | top), config_cls),
        )


def _did_you_mean(function: str, name: str, keywords: list[str], config_cls: type) -> str:
    command = function if function in KEYWORDS else ""
    close = []
    leaf = C.HF_NAMES.get(name, name)  # a transformers name (learning_rate) -> warmstart's (lr)
    for candidate in (leaf,) if isinstance(leaf, str) else leaf:
        if candidate in keywords:
            close.append(f"{candidate}=")
    close += [f"{k}=" for k in difflib.get_close_matches(name, keywords, n=3, cutoff=0.75)]
    for key in C.close_keys(name, C.all_keys(config_cls)):
        typed = keyword_of(command, key)
        close.append(f"{typed}=" if typed else python_key(key, command=command))
    close = list(dict.fromkeys(close))[:3]
    if close:
        return f"did you mean {' or '.join(close)}? (help(warmstart.{function}) lists the keywords)"
    return f"help(warmstart.{function}) lists the keywords"


def settings(kwargs: dict, dotted: Iterable[str]) -> tuple[dict, list[str]]:
    """(nested settings, KEY=VALUE overrides) from keyword arguments (None values left out; dataclass
    sections as their given fields) and strings."""
    flags: dict = {}
    for key, value in kwargs.items():
        if value is None:
            continue
        value = plain(value)
        if key in MAIN_KEY and not isinstance(value, dict):
            value = {MAIN_KEY[key]: value}
        flags[key] = _plain(value)
    overrides = []
    for item in dotted:
        if not isinstance(item, str) or "=" not in item:
            raise WarmstartError(f"the positional setting {_short(item)} is not KEY=VALUE", _by_keyword(item))
        overrides.append(item)
    return flags, overrides


def _short(item: Any) -> str:
    shown = repr(item)
    return shown if len(shown) <= 60 else f"{shown[:57]}..."


def _by_keyword(item: Any) -> str:
    """What to write instead of a positional that is not KEY=VALUE: data, a file or a run go by keyword."""
    if isinstance(item, str | os.PathLike) and os.path.exists(item):
        p = os.fspath(item)
        return (f"positional arguments are settings; pass it by keyword: corpus={p!r} (pretrain, "
                f"train_word2vec, train_tokenizer), data={p!r} (finetune), init= or out=")  # fmt: skip
    if isinstance(item, list | tuple) or hasattr(item, "columns"):
        return "pass texts or rows by keyword: texts=[...] (pretrain, train_word2vec), data=... (finetune)"
    return 'write settings like "train.lr=1e-4"'


def _plain(value: Any) -> Any:
    """Paths as text, inside sections too (the config reads strings)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
