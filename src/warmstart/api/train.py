"""The commands as Python functions: typed keywords for the common settings and the CLI's keys for the rest
(api/settings.py), config sections as dicts or dataclasses (api/configs.py), data in memory (api/data.py),
callbacks that follow the run (train/callbacks.py: ``on_step``, ``on_log``, ``on_evaluate``, ``on_save``,
``on_train_end``; raise ``warmstart.StopTraining`` in one to end the run early), and errors in Python's
words (api/python_errors.py). Each calls the same function as the command line does and returns a
``Run``."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from warmstart import config as C
from warmstart.api import checks
from warmstart.api.configs import (
    DataclassInstance,
    FinetuneConfig,
    PathLike,
    PretrainConfig,
    StrategyConfig,
    TaskConfig,
    TrainConfig,
    given,
    is_config,
    plain,
)
from warmstart.api.data import as_source, data_section
from warmstart.api.python_errors import speaks_python
from warmstart.api.run import Run
from warmstart.api.settings import KEYWORDS, check_keywords, command_flags, settings
from warmstart.commands import finetune as finetune_command
from warmstart.commands import pretrain as pretrain_command
from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import ALGORITHMS
from warmstart.tokenization.train import train_tokenizer as train_tokenizer_fn
from warmstart.train.callbacks import callbacks as checked_callbacks
from warmstart.word2vec.run import Word2VecRunConfig
from warmstart.word2vec.run import run as word2vec_run
from warmstart.word2vec.train import Word2VecConfig

MAX_VOCAB = 1 << 24  # vocab_size of train_tokenizer: far above any real vocabulary, far below a MemoryError


def _corpora(fn: str, corpus: PathLike | Iterable[PathLike] | None, texts: Any) -> list[str] | None:
    names = checks.paths(fn, "corpus", corpus)
    if isinstance(texts, str | bytes | os.PathLike):  # a name or file here would be read as a corpus
        raise checks.ArgumentValueError(  # as scikit-learn's "iterable over raw text documents expected"
            f"{fn}: texts must be texts in memory (a list of strings, a DataFrame...), got "
            f"{checks.type_name(texts)}",
            "one text: texts=['...']; a corpus name or file: corpus='...'",
        )
    if texts is not None:
        names.append(as_source(texts, "texts", fn))
    return names or None


def _check(fn: str, args: dict[str, Any]) -> list:
    """Check the arguments ``fn`` shares with the others (paths, switches, typed keywords) before anything
    is read or written; the callbacks as objects (functions become on_step callbacks)."""
    for name in ("init", "out", "resume", "tokenizer", "shards"):
        checks.path(fn, name, args.get(name), none=True)
    if not is_config(args.get("config")):
        checks.path(fn, "config", args.get("config"), none=True)
    checks.flag(fn, "overwrite", args["overwrite"])
    checks.word(fn, "preset", args.get("preset"), none=True)
    checks.keywords(fn, {k: args[k] for k in KEYWORDS[fn]})
    for name in ("task", "strategy"):  # a name, a dict or a dataclass
        value = args.get(name)
        if value is not None and not isinstance(value, str | dict) and not is_config(value):
            raise checks.ArgumentTypeError(
                f"{fn}: {name} must be a name, a dict or a {name.capitalize()}Config, got {value!r:.60}",
                f'e.g. {name}="{"classification" if name == "task" else "lora"}"',
            )
    return checked_callbacks(args["callbacks"])


@speaks_python("pretrain")
def pretrain(
    *dotted: str,
    corpus: PathLike | Iterable[PathLike] | None = None,
    texts: Any = None,
    tokenizer: PathLike | None = None,
    shards: PathLike | None = None,
    init: PathLike | None = None,
    preset: str | None = None,
    config: PathLike | DataclassInstance | None = None,
    out: PathLike | None = None,
    train: TrainConfig | dict[str, Any] | None = None,
    lr: float | None = None,
    steps: int | None = None,
    batch_size: int | None = None,
    max_length: int | None = None,
    seed: int | None = None,
    device: str | torch.device | None = None,
    bf16: bool | None = None,
    fp16: bool | None = None,
    warmup_ratio: float | None = None,
    weight_decay: float | None = None,
    grad_accum: int | None = None,
    eval_every: int | None = None,
    early_stopping: int | None = None,
    report_to: str | Sequence[str] | None = None,
    metric_for_best_model: str | None = None,
    greater_is_better: bool | None = None,
    gradient_checkpointing: bool | None = None,
    text_column: str | None = None,
    callbacks: Iterable[Any] = (),
    resume: PathLike | None = None,
    overwrite: bool = False,
    **sections: Any,
) -> Run:
    """``warmstart pretrain``: a self-supervised objective on ``corpus`` (names or files) or ``texts`` (a list
    of strings, a DataFrame with a text column...) with ``tokenizer``, or on ``shards``; returns the Run.

    Typed keywords (None: the preset's or the default): ``lr`` peak learning rate (default 5e-4), ``steps``
    optimizer steps (1000), ``batch_size`` sequences per micro-batch (32), ``max_length`` tokens per packed
    sequence (``data.seq_len``, 128), ``seed`` (0), ``device`` ("auto": CUDA when there is one), ``bf16`` /
    ``fp16`` autocast (off), ``warmup_ratio`` (0.06 of the steps), ``weight_decay`` (0.01), ``grad_accum``
    micro-batches per step (1), ``eval_every`` steps (200), ``early_stopping`` evaluations without
    improvement (0: off), ``report_to`` trackers, ``metric_for_best_model`` / ``greater_is_better``,
    ``gradient_checkpointing``, ``text_column`` of a table corpus ("text"). Each sets its ``train.*`` (or
    ``data.*``) key; giving it in ``train=`` too is an error.

    ``preset`` a recipe (``"bert-mini"``, ``"gpt2-tiny"``...); ``config`` a YAML file or a
    ``PretrainConfig`` (or a family's, ``GPT2PretrainConfig``...: warmstart.pretraining.config; below the
    keywords); ``init`` continue from a run (DAPT); sections as dicts or dataclasses
    (``model=dict(hidden_size=256)``, ``train=TrainConfig(clip_norm=0.5)``); ``callbacks`` see
    ``warmstart.train.callbacks``; ``resume`` a run directory to continue; ``overwrite`` replace ``out``."""
    args = locals()
    check_keywords("pretrain", sections, _parameters(pretrain), PretrainConfig)
    hooks = _check("pretrain", args)
    typed = {k: _device(args[k]) for k in KEYWORDS["pretrain"]}
    data = {"corpus": _corpora("pretrain", corpus, texts), "tokenizer": tokenizer, "shards": shards}
    given_data = plain(sections.get("data")) or {}
    sections["data"] = C.merge({k: _text(v) for k, v in data.items() if v is not None}, given_data)
    sections.update(train=train, init=_text(init), out=_text(out))
    flags, overrides = command_flags("pretrain", typed, sections, dotted)
    config_file, flags = _config(config, flags)
    if isinstance(config, PretrainConfig) and type(config) is not PretrainConfig:  # a family's own class
        flags = C.merge({"arch": config.arch}, flags)  # its arch, a default that given() leaves out
    flags = {k: v for k, v in flags.items() if v != {}}
    result = pretrain_command.pretrain(
        preset, config_file, flags, overrides, resume=_text(resume), overwrite=overwrite, hooks=hooks
    )
    return Run(Path(result["run_dir"]), "pretrain", result)


@speaks_python("finetune")
def finetune(
    *dotted: str,
    init: PathLike | None = None,
    data: Any = None,
    out: PathLike | None = None,
    config: PathLike | FinetuneConfig | None = None,
    task: str | TaskConfig | dict[str, Any] | None = None,
    strategy: str | StrategyConfig | dict[str, Any] | None = None,
    train: TrainConfig | dict[str, Any] | None = None,
    lr: float | None = None,
    epochs: float | None = None,
    batch_size: int | None = None,
    max_length: int | None = None,
    seeds: Sequence[int] | None = None,
    seed: int | None = None,
    device: str | torch.device | None = None,
    bf16: bool | None = None,
    fp16: bool | None = None,
    warmup_ratio: float | None = None,
    weight_decay: float | None = None,
    grad_accum: int | None = None,
    eval_every: int | None = None,
    early_stopping: int | None = None,
    steps: int | None = None,
    report_to: str | Sequence[str] | None = None,
    metric_for_best_model: str | None = None,
    greater_is_better: bool | None = None,
    gradient_checkpointing: bool | None = None,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    label_column: str | None = None,
    target_column: str | None = None,
    callbacks: Iterable[Any] = (),
    resume: PathLike | None = None,
    overwrite: bool = False,
    **sections: Any,
) -> Run:
    """``warmstart finetune``: train a task head (and, by ``strategy``, the encoder) of ``init`` on ``data``,
    pick the best model on validation and score it on test; returns the Run (``run.metrics``,
    ``run.history``, ``run.load()``).

    ``init`` a pretrained run, checkpoint or transformers directory. ``data`` a dataset name or file,
    in-memory records (a list of {"text", "label"} dicts, a DataFrame, a datasets.Dataset), your own splits
    (``{"train": df, "validation": df2, "test": df3}``, a DatasetDict), or data settings (a dict or
    ``DataConfig``: ``dict(dataset=df, label_column="stars")``).

    Typed keywords (None: the default): ``lr`` peak learning rate (2e-5), ``epochs`` passes over the train
    split (3; a non-zero ``steps`` wins), ``batch_size`` examples per micro-batch (32), ``max_length`` tokens
    per input (``task.max_length``, 128), ``seeds`` one run each ([0]; 2+ seeds: a summary), ``seed`` one seed
    (``seeds=[seed]``), ``device`` ("auto": CUDA when there is one), ``bf16`` / ``fp16`` autocast (off),
    ``warmup_ratio`` (0.1 of the steps), ``weight_decay`` (0.01), ``grad_accum`` micro-batches per step (1),
    ``eval_every`` steps (0: ``evals_per_epoch``, 4 a pass), ``early_stopping`` evaluations without
    improvement (0: off), ``steps`` optimizer steps (0: from epochs), ``task`` ("classification", "tagging",
    ...), ``strategy`` ("full", "frozen", "lora", ...), ``report_to`` trackers, ``metric_for_best_model`` /
    ``greater_is_better`` (default: the task's metric), ``gradient_checkpointing`` (off), ``text_column``,
    ``text_pair_column``, ``label_column``, ``target_column`` a table's columns (as ``--text-column``...).
    Each sets one config key; giving it in its section too (``train=dict(lr=...)``) is an error. ``config``
    a YAML file or a ``FinetuneConfig`` (below the keywords); other sections as dicts or dataclasses
    (``train=TrainConfig(clip_norm=0.5)``); ``callbacks``: warmstart.train.callbacks; ``resume`` a run
    directory to finish; ``overwrite`` replace ``out``."""
    args = locals()
    check_keywords("finetune", sections, _parameters(finetune), FinetuneConfig)
    hooks = _check("finetune", args)
    typed = {k: _device(args[k]) for k in KEYWORDS["finetune"] if k not in ("task", "strategy")}
    for name in ("task", "strategy"):  # a name is the typed keyword, a dict or dataclass the section
        if isinstance(args[name], str):
            typed[name] = args[name]
        elif args[name] is not None:
            sections[name] = args[name]
    data = plain(data)  # a DataConfig as its settings
    section = data_section(data)  # one dataset, {"train": df, ...}, a DatasetDict or data settings
    if section:
        sections["data"] = section
    sections.update(train=train, init=_text(init), out=_text(out))
    flags, overrides = command_flags("finetune", typed, sections, dotted)
    config_file, flags = _config(config, flags)
    result = finetune_command.finetune(
        config_file, flags, overrides, resume=_text(resume), overwrite=overwrite, hooks=hooks
    )
    return Run(Path(result["run_dir"]), "finetune", result)


def _config(config: Any, flags: dict) -> tuple[str | None, dict]:
    """(config file, flags): a config dataclass lies below the keywords and sections, as a file does."""
    if is_config(config):
        return None, C.merge(given(config), flags)
    return _text(config), flags


def _parameters(fn: Callable[..., Any]) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY]


def _text(value: Any) -> Any:
    """A path as the commands read it (None stays None)."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _device(value: Any) -> Any:
    return str(value) if isinstance(value, torch.device) else value


@speaks_python("train_tokenizer")
def train_tokenizer(
    corpus: PathLike | Iterable[PathLike] | None = None,
    *,
    texts: Any = None,
    out: PathLike,
    kind: str = "wordpiece",
    vocab_size: int = 16000,
    min_frequency: int = 2,
    sentinels: int | None = None,
    text_column: str = "text",
    cased: bool = False,
    overwrite: bool = False,
) -> Tokenizer:
    """``warmstart tokenizer train``: a WordPiece, byte-level BPE or Unigram tokenizer written to ``out``
    from the train split of ``corpus`` (names or files) and/or ``texts`` (in memory); returns it.
    ``cased=True`` keeps case and accents in a WordPiece (BERT cased; the other kinds always keep them)."""
    fn = "train_tokenizer"
    out = checks.path(fn, "out", out)
    kind = checks.word(fn, "kind", kind, ALGORITHMS)
    vocab_size = checks.whole(fn, "vocab_size", vocab_size, 1, MAX_VOCAB, example="vocab_size=16000")
    min_frequency = checks.whole(fn, "min_frequency", min_frequency, 0, example="min_frequency=2")
    most = max(vocab_size, 1000)  # T5: 100 with 32,000 pieces; many more would take minutes to add
    sentinels = checks.whole(fn, "sentinels", sentinels, 0, most, none=True, example="sentinels=100")
    text_column = checks.word(fn, "text_column", text_column)
    checks.flag(fn, "cased", cased)
    checks.flag(fn, "overwrite", overwrite)
    names = _corpora(fn, corpus, texts)
    if not names:
        raise checks.ArgumentValueError(f"{fn}: no text given", "pass corpus=NAME_OR_FILE or texts=[...]")
    stream = corpus_texts(names, DataOptions(text_column=text_column, label_column=None), "train")
    sentinels = sentinels if sentinels is not None else (100 if kind == "unigram" else 0)
    return train_tokenizer_fn(
        stream,
        kind,
        vocab_size,
        out,
        min_frequency=min_frequency,
        overwrite=overwrite,
        sentinels=sentinels,
        lowercase=False if cased else None,
    )


W2V_KEYS = {f for f in Word2VecConfig.__dataclass_fields__}


@speaks_python("train_word2vec")
def train_word2vec(
    *dotted: str,
    corpus: PathLike | Iterable[PathLike] | None = None,
    texts: Any = None,
    out: PathLike | None = None,
    overwrite: bool = False,
    **settings_: Any,
) -> Run:
    """``warmstart word2vec train``: skip-gram or CBOW vectors of ``corpus`` and/or ``texts``, evaluated on
    analogies and word similarity. Word2vec settings go as keywords (``dim=100, model="cbow"``) or in
    ``word2vec=dict(...)``; ``restrict``, ``split_seed`` as on the command line."""
    fn = "train_word2vec"
    checks.path(fn, "out", out, none=True)
    checks.flag(fn, "overwrite", overwrite)
    corpora = _corpora(fn, corpus, texts)
    check_keywords(fn, settings_, [*W2V_KEYS, *_parameters(train_word2vec)], Word2VecRunConfig)
    section = dict(settings_.pop("word2vec", None) or {})
    section.update({k: settings_.pop(k) for k in list(settings_) if k in W2V_KEYS})
    kwargs = {**settings_, "corpus": corpora, "out": _text(out), "word2vec": section or None}
    flags, overrides = settings(kwargs, dotted)
    result = word2vec_run(flags, overrides, overwrite=overwrite)
    return Run(Path(result["run_dir"]), "word2vec", result)
