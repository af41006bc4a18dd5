"""The commands as Python functions: keyword arguments mirror the CLI's keys (api/settings.py), data may be
in memory (api/data.py), and callbacks follow the run (train/callbacks.py: ``on_step``, ``on_evaluate``,
``on_save``; raise ``warmstart.StopTraining`` in one to end the run early). Each calls the same function
as the command line does and returns a ``Run``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from warmstart import config as C
from warmstart.api.data import as_source
from warmstart.api.run import Run
from warmstart.api.settings import settings
from warmstart.commands import finetune as finetune_command
from warmstart.commands import pretrain as pretrain_command
from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer as train_tokenizer_fn
from warmstart.word2vec.run import run as word2vec_run
from warmstart.word2vec.train import Word2VecConfig


def _corpora(corpus, texts) -> list[str] | None:
    names = [corpus] if isinstance(corpus, str | Path) else list(corpus or [])
    if texts is not None:
        names.append(as_source(texts, "texts"))
    return [str(n) for n in names] or None


def pretrain(
    *dotted: str,
    corpus: str | Iterable[str] | None = None,
    texts=None,
    tokenizer: str | None = None,
    shards: str | None = None,
    init: str | None = None,
    preset: str | None = None,
    config: str | None = None,
    out: str | None = None,
    steps: int | None = None,
    callbacks: Iterable = (),
    resume: str | None = None,
    overwrite: bool = False,
    **sections,
) -> Run:
    """``warmstart pretrain``: ``corpus`` names or files, or ``texts`` (a list of strings, a DataFrame with a
    text column...), with ``tokenizer``; or ``shards``. Sections as dicts: ``model=dict(hidden_size=256)``,
    ``train=dict(lr=1e-3)``; ``steps`` is ``train.steps``."""
    data = {"corpus": _corpora(corpus, texts), "tokenizer": tokenizer, "shards": shards}
    sections["data"] = C.merge({k: v for k, v in data.items() if v is not None}, sections.get("data") or {})
    if steps is not None:
        sections["train"] = C.merge(sections.get("train") or {}, {"steps": steps})
    flags, overrides = settings({**sections, "init": init, "out": out}, dotted)
    flags = {k: v for k, v in flags.items() if v != {}}
    result = pretrain_command.pretrain(
        preset, config, flags, overrides, resume=resume, overwrite=overwrite, hooks=callbacks
    )
    return Run(Path(result["run_dir"]), "pretrain", result)


def finetune(
    *dotted: str,
    init: str | None = None,
    data=None,
    out: str | None = None,
    task: str | dict | None = None,
    strategy: str | dict | None = None,
    epochs: float | None = None,
    seeds: list[int] | None = None,
    config: str | None = None,
    callbacks: Iterable = (),
    resume: str | None = None,
    overwrite: bool = False,
    **sections,
) -> Run:
    """``warmstart finetune``: ``init`` a pretrained run, checkpoint or transformers directory; ``data`` a
    dataset name or file, in-memory records (a list of {"text", "label"} dicts, a DataFrame, a
    datasets.Dataset), or a dict of data settings with the dataset under "dataset" (``data=dict(dataset=df,
    label_column="stars")``). ``task="tagging"``, ``strategy="lora"``; other sections as dicts."""
    if isinstance(data, dict) and "dataset" in data:
        section = {**data, "dataset": as_source(data["dataset"], "data")}
    else:
        section = {} if data is None else {"dataset": as_source(data, "data")}
    if section:
        sections["data"] = section
    kwargs = dict(init=init, out=out, task=task, strategy=strategy, epochs=epochs, seeds=seeds)
    flags, overrides = settings({**sections, **kwargs}, dotted)
    result = finetune_command.finetune(
        config, flags, overrides, resume=resume, overwrite=overwrite, hooks=callbacks
    )
    return Run(Path(result["run_dir"]), "finetune", result)


def train_tokenizer(
    corpus: str | Iterable[str] | None = None,
    *,
    texts=None,
    out: str,
    kind: str = "wordpiece",
    vocab_size: int = 16000,
    min_frequency: int = 2,
    sentinels: int | None = None,
    text_column: str = "text",
    overwrite: bool = False,
) -> Tokenizer:
    """``warmstart tokenizer train``: a WordPiece, byte-level BPE or Unigram tokenizer written to ``out``
    from the train split of ``corpus`` (names or files) and/or ``texts`` (in memory); returns it."""
    names = _corpora(corpus, texts)
    if not names:
        from warmstart.errors import WarmstartError

        raise WarmstartError("no text given", "pass corpus=NAME_OR_FILE or texts=[...]")
    stream = corpus_texts(names, DataOptions(text_column=text_column, label_column=None), "train")
    sentinels = sentinels if sentinels is not None else (100 if kind == "unigram" else 0)
    return train_tokenizer_fn(
        stream, kind, vocab_size, out, min_frequency=min_frequency, overwrite=overwrite, sentinels=sentinels
    )


W2V_KEYS = {f for f in Word2VecConfig.__dataclass_fields__}


def word2vec(
    *dotted: str,
    corpus: str | Iterable[str] | None = None,
    texts=None,
    out: str | None = None,
    overwrite: bool = False,
    **settings_,
) -> Run:
    """``warmstart word2vec train``: skip-gram or CBOW vectors of ``corpus`` and/or ``texts``, evaluated on
    analogies and word similarity. Word2vec settings go as keywords (``dim=100, model="cbow"``) or in
    ``word2vec=dict(...)``; ``restrict``, ``split_seed`` as on the command line."""
    section = dict(settings_.pop("word2vec", None) or {})
    section.update({k: settings_.pop(k) for k in list(settings_) if k in W2V_KEYS})
    kwargs = {**settings_, "corpus": _corpora(corpus, texts), "out": out, "word2vec": section or None}
    flags, overrides = settings(kwargs, dotted)
    result = word2vec_run(flags, overrides, overwrite=overwrite)
    return Run(Path(result["run_dir"]), "word2vec", result)
