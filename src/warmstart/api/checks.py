"""The argument checks of the Python API: every public function and ``Model`` method checks what it was given
here, first, before it reads a model or writes a file, so that a wrong argument is one line naming it in
Python's words (``predict: batch_size must be at least 1, got 0``) and leaves nothing behind.

An error is a ``WarmstartError`` that is also a ``TypeError`` (the wrong type of value) or a ``ValueError``
(the right type, out of range, empty, or text that is not valid Unicode), so either ``except`` matches. Values
are quoted short (a 5 MB string is not echoed), paths are checked for what no file system takes (empty, a NUL,
longer than a path or a file name can be), texts for unpaired surrogates (``"\\ud800"``, which tokenizers
cannot encode)."""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Iterable
from typing import Any

from warmstart.config import short
from warmstart.data.lines import surrogate_in
from warmstart.data.options import COLUMNS
from warmstart.errors import WarmstartError
from warmstart.numbers import SEED_MAX, number_range

MAX_PATH = 4096  # characters of a whole path (Linux PATH_MAX)
MAX_NAME = 255  # bytes of one file or directory name (NAME_MAX on every common file system)


class ArgumentError(WarmstartError):
    """A wrong argument of an API function; its message is already in Python's words."""

    speaks_python = True  # api/python_errors.py leaves the text as it is


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type (a number where a text goes...)."""


class ArgumentValueError(ArgumentError, ValueError):
    """An argument of the right type but out of range, empty, or not valid text."""


def _type(fn: str, name: str, must: str, value: Any, example: str) -> ArgumentTypeError:
    return ArgumentTypeError(f"{fn}: {name} must be {must}, got {type_name(value)}", f"e.g. {example}")


def _value(fn: str, name: str, must: str, value: Any, example: str) -> ArgumentValueError:
    return ArgumentValueError(f"{fn}: {name} must be {must}, got {short(value, 60)}", f"e.g. {example}")


def type_name(value: Any) -> str:
    """A value as an error quotes it when its type is wrong: ``an int (42)``."""
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name} ({short(value, 60)})"


def whole(
    fn: str,
    name: str,
    value: Any,
    least: int = 0,
    most: int | None = None,
    none: bool = False,
    example: str | None = None,
    must: str | None = None,
) -> Any:
    """A whole number from ``least`` to ``most`` (None too when ``none``); numpy integers count, bools not.
    ``most`` by default: what the config keys of that name take (numbers.py: a size at most 2**24, a count
    what torch's int64 holds). ``must``: what the error says it must be, instead of "a whole number" and "at
    least ``least``"."""
    example = example or f"{name}={max(least, 1)}"
    most = number_range(name.partition("[")[0])[1] if most is None else most
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _type(fn, name, must or "a whole number" + (" or None" if none else ""), value, example)
    value = int(value)
    if value < least:
        raise _value(fn, name, must or f"at least {least}", value, example)
    if most is not None and value > most:
        raise _value(fn, name, f"at most {most:,}", value, example)
    return value


def number(
    fn: str,
    name: str,
    value: Any,
    least: float | None = None,
    above: float | None = None,
    most: float | None = None,
    none: bool = True,
    example: str | None = None,
) -> Any:
    """A finite real number (None too when ``none``), at least ``least``, above ``above``, at most
    ``most``."""
    example = example or f"{name}=1.0"
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _type(fn, name, "a number" + (" or None" if none else ""), value, example)
    given, value = value, float(value)
    if not math.isfinite(value):
        raise _value(fn, name, "a finite number", given, example)
    if least is not None and value < least:
        raise _value(fn, name, f"at least {least:g}", given, example)
    if above is not None and value <= above:
        raise _value(fn, name, f"above {above:g}", given, example)
    if most is not None and value > most:
        raise _value(fn, name, f"at most {most:g}", given, example)
    return value


def flag(fn: str, name: str, value: Any, none: bool = False) -> Any:
    """True or False (numpy's bools count; None too when ``none``)."""
    if value is None and none:
        return None
    if type(value).__name__ not in ("bool", "bool_"):
        raise _type(fn, name, "True or False" + (" or None" if none else ""), value, f"{name}=True")
    return bool(value)


def word(fn: str, name: str, value: Any, choices: Iterable[str] = (), none: bool = False) -> Any:
    """A non-empty string, one of ``choices`` when they are given (None too when ``none``)."""
    options = tuple(choices)
    example = f"{name}={options[0]!r}" if options else f"{name}='...'"
    if value is None and none:
        return None
    if not isinstance(value, str):
        raise _type(fn, name, "a string" + (" or None" if none else ""), value, example)
    if options and value not in options:
        raise _value(fn, name, f"one of {', '.join(map(repr, options))}", value, example)
    if not value:
        raise _value(fn, name, "a non-empty string", value, example)
    return value


def path(fn: str, name: str, value: Any, none: bool = False) -> Any:
    """A path as text (a ``str`` or ``pathlib.Path``; None too when ``none``) that a file system can hold:
    not empty, no NUL, at most 4,096 characters and 255 bytes a name. A path too long is quoted by its
    start."""
    example = f"{name}='runs/my-run'"
    if value is None and none:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise _type(fn, name, "a path (a str or pathlib.Path)", value, example)
    if not value:
        raise ArgumentValueError(f"{fn}: {name} is an empty path", f"e.g. {example}")
    start = repr(value[:40]) + ("..." if len(value) > 40 else "")
    if "\0" in value:
        raise ArgumentValueError(f"{fn}: {name} holds a NUL character, which no path can", f"e.g. {example}")
    try:
        value.encode(sys.getfilesystemencoding(), "surrogateescape")
    except UnicodeEncodeError:
        raise ArgumentValueError(
            f"{fn}: {name} ({start}) holds characters this file system cannot name (a lone surrogate?)",
            f"e.g. {example}",
        ) from None
    if len(value) > MAX_PATH:
        raise ArgumentValueError(
            f"{fn}: {name} is {len(value):,} characters long ({start}), too long to be a path "
            f"(at most {MAX_PATH:,})",
            f"pass a path, e.g. {example}; in-memory data goes as a list or DataFrame",
        )
    longest = max(value.replace("\\", "/").split("/"), key=lambda part: len(part.encode("utf-8", "replace")))
    if len(longest.encode("utf-8", "replace")) > MAX_NAME:
        raise ArgumentValueError(
            f"{fn}: {name} ({start}) has a name of {len(longest):,} characters, longer than a file name can "
            f"be ({MAX_NAME} bytes)",
            f"pass a path, e.g. {example}",
        )
    return value


def paths(fn: str, name: str, value: Any) -> list[str]:
    """One path or several (a list or other iterable of paths): each checked as ``path``; [] for None."""
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [path(fn, name, value)]
    if not isinstance(value, Iterable):
        raise _type(fn, name, "a path or a list of paths", value, f"{name}=['a.txt', 'b.txt']")
    return [path(fn, f"{name}[{i}]", item) for i, item in enumerate(value)]


def text(fn: str, name: str, value: Any, empty: bool = True) -> str:
    """A string that is valid Unicode (no unpaired surrogate); not blank unless ``empty``."""
    if not isinstance(value, str):
        raise _type(fn, name, "a string", value, f"{name}='some text'")
    unicode(fn, name, value)
    if not empty and not value.strip():
        raise ArgumentValueError(f"{fn}: {name} is empty (no text)", "pass some text")
    return value


def unicode(fn: str, name: str, value: Any) -> None:
    """Refuse an unpaired surrogate anywhere in ``value`` (a string, or dicts and lists of them)."""
    hit = surrogate_in(value)
    if hit:
        where = name + (f"[{hit[0]!r}]" if hit[0] and not hit[0].startswith("a key") else "")
        raise ArgumentValueError(
            f"{fn}: {where} holds an unpaired surrogate ({hit[1]}) and is not valid Unicode",
            "remove it, or write the character it stands for (a pair such as \\ud83d\\ude00 is fine)",
        )


def is_frame(value: Any) -> bool:
    """Whether ``value`` is a table of rows with named columns (a pandas DataFrame), whose iteration gives its
    column names, not its rows."""
    return all(hasattr(value, a) for a in ("columns", "iloc", "to_dict"))


def texts(fn: str, name: str, value: Any, empty: bool = True) -> tuple[list[str], bool]:
    """(the texts, whether one string was given): a string or a non-empty list (any iterable) of strings."""
    if isinstance(value, str):
        return [text(fn, name, value, empty)], True
    if is_frame(value):  # iterating it would give the column names as texts
        columns = ", ".join(map(str, list(value.columns)[:10]))
        raise ArgumentValueError(
            f"{fn}: {name} is a table (columns: {columns}), not texts", f"pass one column: {name}=df['text']"
        )
    if not isinstance(value, Iterable) or isinstance(value, bytes | dict):
        raise _type(fn, name, "a string or a list of strings", value, f"{name}=['a text', 'another']")
    items = list(value)
    if not items:
        raise ArgumentValueError(f"{fn}: {name} is empty", "pass at least one text")
    return [text(fn, f"{name}[{i}]", item, empty) for i, item in enumerate(items)], False


def seeds(fn: str, name: str, value: Any) -> list[int]:
    """A list of seeds: whole numbers from 0 to 2**32 - 1, as the config's ``seeds`` (numbers.py)."""
    if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable):
        raise _type(fn, name, "a list of whole numbers", value, f"{name}=[1, 2, 3]")
    items = list(value)
    if not items:
        raise ArgumentValueError(f"{fn}: {name} is empty", f"e.g. {name}=[1, 2, 3]")
    return [
        whole(fn, f"{name}[{i}]", s, 0, SEED_MAX, example=f"{name}=[1, 2, 3]") for i, s in enumerate(items)
    ]


def names(fn: str, name: str, value: Any) -> list[str]:
    """One non-empty string or a list of them (``report_to="mlflow"``, ``stop=["\\n"]``)."""
    if isinstance(value, str):
        return [text(fn, name, word(fn, name, value))]
    if not isinstance(value, Iterable) or isinstance(value, bytes | dict):
        raise _type(fn, name, "a string or a list of strings", value, f"{name}=['a', 'b']")
    return [text(fn, f"{name}[{i}]", word(fn, f"{name}[{i}]", v)) for i, v in enumerate(value)]


def device(fn: str, name: str, value: Any) -> None:
    """A device name ("cpu", "cuda:1"...) or a ``torch.device``; None (the default) passes."""
    if value is not None and not isinstance(value, str) and type(value).__name__ != "device":
        raise _type(
            fn, name, 'a device name ("cpu", "cuda", "cuda:1") or a torch.device', value, 'device="cpu"'
        )


# the typed keywords of finetune and pretrain (api/settings.py), None being "not given": their types, and the
# ranges of counts, before any data is read or written. The configs check again where they are read, and
# alone hold the ranges of the rates (lr in [0, 1]: train/loop.py; fractions: config.py).
KEYWORDS = {
    "lr": lambda fn, n, v: number(fn, n, v, example="lr=3e-5"),
    "epochs": lambda fn, n, v: number(fn, n, v, above=0, most=1e6, example="epochs=3"),  # steps fit int64
    "batch_size": lambda fn, n, v: whole(fn, n, v, 1, example="batch_size=32"),
    "max_length": lambda fn, n, v: whole(fn, n, v, 1, example="max_length=128"),
    "seeds": seeds,
    "seed": lambda fn, n, v: whole(fn, n, v, 0, SEED_MAX, example="seed=1"),
    "device": device,
    "bf16": flag,
    "fp16": flag,
    "greater_is_better": flag,
    "gradient_checkpointing": flag,
    "warmup_ratio": lambda fn, n, v: number(fn, n, v, example="warmup_ratio=0.1"),
    "weight_decay": lambda fn, n, v: number(fn, n, v, example="weight_decay=0.01"),
    # an optimizer step loads all its micro-batches at once (train/fit.py): millions would fill the memory
    "grad_accum": lambda fn, n, v: whole(fn, n, v, 1, 4096, example="grad_accum=8"),
    "eval_every": lambda fn, n, v: whole(fn, n, v, 0, example="eval_every=100"),
    "early_stopping": lambda fn, n, v: whole(fn, n, v, 0, example="early_stopping=3"),
    "steps": lambda fn, n, v: whole(fn, n, v, 0, example="steps=1000"),
    "report_to": names,
    "metric_for_best_model": word,
    **dict.fromkeys(COLUMNS, word),
}


def keywords(fn: str, values: dict[str, Any]) -> None:
    """Check the typed keywords given (None: left to the defaults)."""
    for name, value in values.items():
        if value is not None and name in KEYWORDS:
            KEYWORDS[name](fn, name, value)


def predict_inputs(fn: str, value: Any) -> tuple[list[str | dict], bool]:
    """(the inputs, whether one was given) of ``predict``: a text, a (text, text_pair) tuple, a dict, or a
    non-empty list of them, or a DataFrame (its rows as dicts). Texts must be valid Unicode and not blank; a
    number (or NaN) is not a text.
    A (text, text_pair) tuple comes back as {"text", "text_pair"}; a dict's keys are the task's to check."""
    if is_frame(value):  # a DataFrame: its rows, keyed by column (the run's own names are read as its keys)
        value = value.to_dict("records")
    single = isinstance(value, str | dict) or (isinstance(value, tuple) and len(value) == 2)
    if not single and (not isinstance(value, Iterable) or isinstance(value, bytes)):
        must = "a text, a (text, text_pair) tuple, a dict or a list of them"
        raise _type(fn, "inputs", must, value, "predict(['a warm film', 'dull'])")
    items = [value] if single else list(value)
    if not items:
        raise ArgumentValueError(f"{fn}: inputs is empty", "pass at least one text")
    out: list[str | dict] = []
    for i, item in enumerate(items):
        where = "inputs" if single else f"inputs[{i}]"
        if isinstance(item, str):
            out.append(text(fn, where, item, empty=False))
        elif isinstance(item, tuple) and len(item) == 2:
            pair = (text(fn, f"{where}[0]", item[0], empty=False), text(fn, f"{where}[1]", item[1]))
            out.append({"text": pair[0], "text_pair": pair[1]})
        elif isinstance(item, dict):
            unicode(fn, where, item)
            out.append(item)
        else:
            raise _type(fn, where, "a text, a (text, text_pair) tuple or a dict", item, "'a warm film'")
    return out, single


def embeddings(fn: str, name: str, value: Any) -> Any:
    """Vectors for ``similarity``: one (D,) vector or an (N, D) matrix of finite numbers, N and D at least 1
    (a numpy array, a tensor or nested lists), as a float32 numpy array."""
    import numpy as np

    if hasattr(value, "detach"):  # a torch tensor, on any device
        value = value.detach().float().cpu().numpy()
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise _type(
            fn, name, "texts or embeddings (an array of numbers)", value, f"{name}=model.encode(texts)"
        ) from None
    if array.ndim not in (1, 2) or array.size == 0:
        raise ArgumentValueError(
            f"{fn}: {name} must be one vector or a matrix of vectors, got shape {array.shape}",
            f"e.g. {name}=model.encode(texts)",
        )
    if not np.isfinite(array).all():
        raise ArgumentValueError(f"{fn}: {name} holds NaN or infinite values", "pass finite embeddings")
    return array
