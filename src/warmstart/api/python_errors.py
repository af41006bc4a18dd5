"""Errors raised from warmstart's Python functions speak Python, not the command line.

The commands' errors (``WarmstartError(problem, fix)``) are written for the shell: ``pass --init RUN``,
``use e.g. train.lr=3e-4``, ``see `--help```. Every function of the Python API runs inside
``speaks_python(name)``, which rewrites the error it raises in place (the same class, so a caller's
``except`` still matches; the traceback kept) before it leaves:

- a flag with its value, ``--init RUN`` -> ``init=RUN``, ``--epochs 3`` -> ``epochs=3``, ``--dataset X`` ->
  ``data="X"``, ``--train-file F`` -> ``data=dict(train="F")``, ``--overwrite`` -> ``overwrite=True``;
- a command line, ``warmstart finetune --resume RUN`` -> ``warmstart.finetune(resume=RUN)`` (other
  commands, ``warmstart report RUN``, stay commands: they are still the way to do that);
- ``--help`` -> ``help(warmstart.finetune)``;
- a config key, ``train.lr=3e-4`` -> ``lr=3e-4`` (a typed keyword: api/settings.py),
  ``train.clip_norm=0`` -> ``train=dict(clip_norm=0)``; ``config key 'x.y'`` -> ``the setting x=dict(y=...)``.

Values are written as Python reads them (``true`` -> ``True``, text quoted); upper-case placeholders
(``RUN``, ``FILE``) stay bare; an aside ``(from Python: ...)`` is dropped. ``Stopped`` (SIGINT/SIGTERM)
gets its "continue with" line rewritten too."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import re
import typing
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from warmstart.api.settings import UnknownKeyword, python_key
from warmstart.errors import Stopped, WarmstartError

P = ParamSpec("P")
R = TypeVar("R")

# commands that are Python functions: the words after "warmstart" -> the function
COMMANDS = {"finetune": "finetune", "pretrain": "pretrain", "tokenizer train": "train_tokenizer",
            "word2vec train": "train_word2vec"}  # fmt: skip
BOOLEAN_FLAGS = {"overwrite", "from-scratch", "random-init", "json", "no-cache", "show-special", "quick",
                 "keep-models", "no-report", "no-scratch", "plot", "no-adapter"}  # fmt: skip
RENAMED = {"dataset": "data"}  # flags whose keyword is not the flag's name (--max-length: max_length)
SPLIT_FLAGS = {"train-file": "train", "validation-file": "validation", "test-file": "test"}
PATH_FLAGS = {"init", "out", "resume", "dataset", "data", "config", "shards", "tokenizer", "corpus", "input",
              "train-file", "validation-file", "test-file", "vectors", "checkpoint"}  # fmt: skip
WORD_VALUES = {"kind", "strategy", "objective", "task", "arch", "preset", "pooling", "split", "schedule"}
NOT_VALUES = {"to", "or", "and", "is", "are", "must", "goes", "the", "a", "an", "with", "for", "in",
              "on", "of", "if", "when", "but", "then", "as", "at", "instead", "too", "also", "only",
              "again", "it", "that", "which", "model", "run", "runs", "directory", "file", "files",
              "path", "value", "flag", "option", "setting", "checkpoint", "above", "below", "first",
              "here", "so", "than", "not", "needs", "takes", "gives", "alone", "itself", "etc"}  # fmt: skip

_VALUE = r"[^\s;,`'\"()\[\]]+(?:,[^\s;,`'\"()\[\]]+)*"  # a word; "1,2,3" is one value
_FLAG = re.compile(rf"(?<![\w-])--([a-z][a-z0-9-]*)(?:[ =]({_VALUE}))?")
_COMMAND = re.compile(
    r"\bwarmstart (tokenizer train|word2vec train|finetune|pretrain)((?:\s+--[a-z][a-z0-9-]*(?:[ =](?!--)"
    r"[^\s;,`'\"()]+)?)*)"
)
_CONFIG_KEY = re.compile(r"(unknown )?config key '([\w.]+)'")
_DOTTED = re.compile(
    r"(?<![\w./:'\"-])([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)(?:=([^\s,;)`'\"]+)| (-?\d[\w.+-]*))?"
)


def speaks_python(function: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function of the Python API (``warmstart.<function>``, or ``Model.<method>``): errors it
    raises are rewritten for Python (the module docstring)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:  # an argument it does not take: a WarmstartError naming it
                raise _bad_call(function, signature, kwargs, exc) from None
            try:
                return fn(*args, **kwargs)
            except (WarmstartError, Stopped) as exc:
                translate(exc, function)
                raise

        return run

    return wrap


def _bad_call(function: str, signature: inspect.Signature, kwargs: dict, exc: TypeError) -> UnknownKeyword:
    """The error for a call that does not bind: the keyword it does not take and the ones it probably
    meant, or Python's own words (a missing or surplus positional argument)."""
    names = [n for n in signature.parameters if n != "self"]
    unknown = [k for k in kwargs if k not in signature.parameters]
    if not unknown:
        return UnknownKeyword(f"warmstart.{function}(): {exc}", f"help(warmstart.{function}) lists them")
    close = difflib.get_close_matches(unknown[0], names, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(f'{c}=' for c in close)}? " if close else ""
    return UnknownKeyword(
        f"warmstart.{function}() got an unknown keyword {unknown[0]}=",
        f"{hint}it takes {', '.join(names)} (help(warmstart.{function}))",
    )


def translate(exc: BaseException, function: str) -> None:
    """Rewrite ``exc``'s text for Python, in place (once: an error passing through two functions is
    rewritten by the first)."""
    if getattr(exc, "speaks_python", False):
        return
    command = function if function in ("finetune", "pretrain") else ""
    if isinstance(exc, WarmstartError):
        exc.problem = python_text(exc.problem, function, command)
        exc.fix = python_text(exc.fix, function, command) if exc.fix else exc.fix
        exc.args = (f"{exc.problem}; {exc.fix}" if exc.fix else exc.problem, *exc.args[1:])
    elif exc.args:
        exc.args = (python_text(str(exc.args[0]), function, command), *exc.args[1:])
    exc.speaks_python = True  # type: ignore[attr-defined]


def python_text(text: str, function: str = "finetune", command: str = "") -> str:
    """One message rewritten for Python (the module docstring); ``command``: whose typed keywords apply. A
    command-line message's own aside for Python users, ``(from Python: ...)``, goes: the flag becomes it."""
    text = re.sub(r" \(from Python: [^)]*\)", "", text)
    parts = re.split(r"(`[^`]*`)", text)  # backticked pieces: a command line, a flag, or left alone
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            inner = part[1:-1]
            if inner.startswith("warmstart ") and not _COMMAND.match(inner):
                out.append(part)  # another command: still the way to do that
                continue
            if not (inner.startswith("--") or inner.startswith("warmstart ")):
                out.append(part)
                continue
            out.append(_rewrite(inner, function, command))
        else:
            out.append(_rewrite(part, function, command))
    return "".join(out)


def _rewrite(text: str, function: str, command: str) -> str:
    text = _COMMAND.sub(lambda m: _call(m.group(1), m.group(2)), text)
    text = _FLAG.sub(lambda m: _flag(m.group(1), m.group(2), function), text)
    text = _CONFIG_KEY.sub(lambda m: _config_key(m.group(2), bool(m.group(1)), command), text)
    return _DOTTED.sub(lambda m: _dotted(m, command), text)


def _call(words: str, flags: str) -> str:
    """``warmstart finetune --resume RUN`` -> ``warmstart.finetune(resume=RUN)``."""
    args = [_flag(m.group(1), m.group(2), COMMANDS[words]) for m in _FLAG.finditer(flags)]
    return f"warmstart.{COMMANDS[words]}({', '.join(args)})"


def _flag(name: str, value: str | None, function: str) -> str:
    value, trailing = _punctuation(value)
    if value is not None and not _is_value(name, value):
        value, trailing = None, f" {value}{trailing}"
    if name == "help":
        return f"help(warmstart.{function}){trailing}"
    if name in SPLIT_FLAGS:
        return f"data=dict({SPLIT_FLAGS[name]}={py_value(value)})" + trailing
    keyword = RENAMED.get(name, name.replace("-", "_"))
    if name in BOOLEAN_FLAGS:
        return f"{keyword}=True" + ("" if value is None else f" {value}") + trailing
    return f"{keyword}={py_value(value)}{trailing}"


def _punctuation(value: str | None) -> tuple[str | None, str]:
    """(value, the sentence's punctuation it swallowed): ``runs/x.`` -> (``runs/x``, ``.``)."""
    if value and len(value) > 1 and value[-1] in ".:" and value[-2] != ".":
        return value[:-1], value[-1]
    return value, ""


def _is_value(flag: str, word: str) -> bool:
    """Whether the word after ``--flag`` is its value (a placeholder, number or path), not prose."""
    if flag in BOOLEAN_FLAGS or word.startswith("-"):
        return False
    if word.isupper() and len(word) > 1 or re.fullmatch(r"-?\d[\w.,+-]*", word):  # RUN, FILE; 3, 1e-4
        return True
    if word.lower() in NOT_VALUES:
        return False
    if re.search(r"[/.:_\\-]", word) or flag in PATH_FLAGS:  # a path, hf:NAME, a file name
        return True
    return flag in WORD_VALUES and word.isalnum()


def py_value(value: str | None) -> str:
    """A value from a message as Python writes it: numbers, True/False/None and upper-case placeholders
    bare, ``...`` for none, text quoted."""
    if value is None:
        return "..."
    lowered = value.lower()
    if lowered in ("true", "false", "null", "none"):
        return {"true": "True", "false": "False"}.get(lowered, "None")
    if value.isupper() or value.startswith("<") or re.fullmatch(r"-?\d[\d.e+-]*", value) or value == "...":
        return value
    if re.fullmatch(r"-?\d+(,-?\d+)+", value):  # seeds 1,2,3
        return "[" + ", ".join(value.split(",")) + "]"
    return repr(value).replace("'", '"') if "'" not in value else repr(value)


def _config_key(key: str, unknown: bool, command: str) -> str:
    section, _, leaf = key.rpartition(".")
    if unknown:
        return f"unknown key {leaf!r} in {section}=dict(...)" if section else f"unknown keyword {leaf}="
    return f"the setting {python_key(key, command=command)}"


def _dotted(m: re.Match, command: str) -> str:
    section, leaf, value, number = m.group(1), m.group(2), m.group(3), m.group(4)
    if leaf not in sections().get(section, ()):
        return m.group(0)  # not a config key: a file name (model.safetensors), a module, prose
    value, trailing = _punctuation(value if value is not None else number)
    shown = None if value is None else py_value(value)
    return python_key(f"{section}.{leaf}", shown, command) + trailing


@functools.cache
def sections() -> dict[str, frozenset[str]]:
    """Every config section's keys ({"train": {"lr", ...}, "model": every family's keys, ...})."""
    from warmstart.api.configs import FinetuneConfig, PretrainConfig
    from warmstart.registry import MODELS

    found: dict[str, set[str]] = {}
    for cls in (FinetuneConfig, PretrainConfig):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if dataclasses.is_dataclass(hints[f.name]):
                found.setdefault(f.name, set()).update(g.name for g in dataclasses.fields(hints[f.name]))
    for config_cls, _ in MODELS.values():
        found.setdefault("model", set()).update(g.name for g in dataclasses.fields(config_cls))
    from warmstart.word2vec.train import Word2VecConfig

    found["word2vec"] = {g.name for g in dataclasses.fields(Word2VecConfig)}
    return {k: frozenset(v) for k, v in found.items()}
