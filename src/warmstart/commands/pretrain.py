"""`warmstart pretrain`: a self-supervised objective on token shards, through the one fit loop."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

from warmstart import config as C
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.continue_from import check_tokenizer, open_init
from warmstart.checkpoints.continue_from import load_weights as load_init_weights
from warmstart.checkpoints.load import backbone, read_config
from warmstart.checkpoints.workdir import recorded
from warmstart.data.catalog import open_dataset
from warmstart.data.corpus import corpus_texts, ensure_shards, options
from warmstart.data.globbed import is_pattern, matches
from warmstart.data.packing import FixedWindowBatches, WindowBatches
from warmstart.data.shards import TokenShards, read_meta
from warmstart.data.unique_tokens import (
    account,
    at_steps,
    check_batch,
    describe,
    first_tokens,
    read_account,
    too_few,
    write_account,
)
from warmstart.errors import WarmstartError
from warmstart.hub.on_the_fly import warmstart_dir
from warmstart.objectives.base import Objective
from warmstart.paths import cache_dir, refuse_overlap
from warmstart.pretraining.build import build_unit, init_std, model_config_json, sections
from warmstart.pretraining.config import PretrainConfig, resolve_pretrain_config
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.tokenization.train import train_tokenizer
from warmstart.train import distributed as ddp
from warmstart.train.checkpoint import Checkpointer
from warmstart.train.fit import fit
from warmstart.train.resume import check_fingerprint, shards_fingerprint, write_fingerprint
from warmstart.train.rundir import abandon, hold, open_run_dir, save_config, unwind
from warmstart.train.trackers import check_installed
from warmstart.word2vec.io import load_vectors
from warmstart.word2vec.warm_start import check_dimensions, warm_start_embeddings

# the tokenizer a family is trained with when neither --tokenizer nor the recipe names one (presets of gpt2,
# t5, bart, roberta, xlnet and elmo name theirs: data.tokenizer_kind)
FAMILY_KIND = {"bert": "wordpiece", "gpt2": "bpe", "t5": "unigram", "bart": "bpe", "xlnet": "unigram",
               "elmo": "word"}  # fmt: skip
MAX_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_length")  # a family's model.max_length


def check_fit(
    cfg: PretrainConfig, tokenizer: Tokenizer, explicit: dict, unit_cls: type[Objective]
) -> PretrainConfig:
    """``cfg`` with the tokenizer's vocabulary size, once the tokenizer, the model and ``unit_cls`` (the
    objective) fit together."""
    given = explicit.get("model", {}).get("vocab_size")
    if given is not None and given != tokenizer.vocab_size:
        raise WarmstartError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but model.vocab_size is {given}",
            "drop model.vocab_size (it is taken from the tokenizer) or use the matching tokenizer",
        )
    limit = getattr(cfg.model, "max_length", None)  # None: no learned positions (T5's relative ones, ELMo)
    if limit is not None and cfg.data.seq_len > limit:
        key = next(k for k in MAX_LENGTH_KEYS if hasattr(cfg.model, k))
        raise WarmstartError(
            f"data.seq_len {cfg.data.seq_len} exceeds model.{key} {cfg.model.max_length}",
            f"lower data.seq_len or raise model.{key}",
        )
    if cfg.data.tokenizer_kind and cfg.data.tokenizer_kind != tokenizer.algorithm:
        raise WarmstartError(
            f"this recipe needs a {cfg.data.tokenizer_kind} tokenizer, "
            f"the one given is {tokenizer.algorithm}",
            f"train one with `warmstart tokenizer train --kind {cfg.data.tokenizer_kind}`",
        )
    if "mlm" in unit_cls.sections and cfg.mlm.mask_prob == 0:  # a loss of 0.0 that trains nothing
        raise WarmstartError("mlm.mask_prob is 0: no token would be predicted", "set it in (0, 1], e.g. 0.15")
    unit_cls.check_tokenizer(tokenizer)
    unit_cls.check_model(cfg.model)
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, vocab_size=tokenizer.vocab_size))


def pretrain(
    preset=None,
    config_file=None,
    flags=None,
    overrides=(),
    resume: str | None = None,
    overwrite: bool = False,
    hooks=(),
) -> dict:
    """The run's config resolved once (a ``resume``: the run's own, flags that would change it refused),
    then its tokenizer, data and unit through the fit loop; fit's result with ``run_dir``."""
    cfg, explicit, unit_cls = resolve_pretrain_config(preset, config_file, flags, overrides, resume)
    check_installed(cfg.train.report_to)  # train.report_to=mlflow without mlflow: one line, before any work
    if not resume:  # an output that is, holds or lies inside an input is refused before anything changes
        inputs = {"--init": cfg.init, "--shards": cfg.data.shards, "tokenizer": cfg.data.tokenizer}
        inputs.update({f"corpus {c}": c for c in cfg.data.corpus})
        refuse_overlap(cfg.out, {**inputs, "word vectors": cfg.embeddings.vectors})
    init = None
    if cfg.init and not resume:  # on resume the run's own checkpoint holds the weights
        init, cfg = _open_init(cfg, explicit, unit_cls)
    cfg = _recipe_tokenizer(cfg)
    tokenizer, shards_dir = _tokenizer_and_shards_source(cfg)
    if init is not None:  # with --shards, the tokenizer is the one the shards were made with
        check_tokenizer(init, tokenizer, "shards' tokenizer" if shards_dir else "tokenizer given")
    cfg = check_fit(cfg, tokenizer, explicit, unit_cls)
    if shards_dir is not None:
        _check_shards(shards_dir, tokenizer)  # before anything is written
    vectors = _word_vectors(cfg) if not resume else None  # a bad vectors file fails before any write too
    ddp.init(cfg.train.device, cfg.train.dist_timeout)  # torchrun: join the other processes

    def start():  # torchrun: the first process creates the run directory (and shards), the others read it
        main = ddp.is_main()
        run_dir = open_run_dir(cfg.out, resume=bool(resume) or not main, overwrite=overwrite)
        try:
            if not resume and main:
                save_config(run_dir, recorded(C.to_dict(cfg)))  # and where it started, for --resume elsewhere
            train, evals, unit, used = _setup(cfg, tokenizer, shards_dir, unit_cls, run_dir)
            fingerprint = shards_fingerprint(used) if main else None
            if resume and main:  # ... and so are shards that are not what the run started on
                check_fingerprint(run_dir, fingerprint)
            elif main:
                write_fingerprint(run_dir, fingerprint)
            if init is not None:
                _continue(unit, init, run_dir)
            if vectors is not None:
                _warm_start(unit, cfg, tokenizer, vectors, run_dir)
        except WarmstartError:
            # the directory was created just above: a late error leaves nothing (or the run it replaced)
            if not resume and main and not abandon(run_dir):
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        return run_dir, train, evals, unit

    run_dir, train, evals, unit = ddp.main_first(start)
    ckpt = Checkpointer(run_dir, model_config_json(cfg, tokenizer, unit_cls), tokenizer)
    try:
        with hold(run_dir) if ddp.is_main() else contextlib.nullcontext():  # one process trains in a run
            result = fit(
                unit, train, evals, cfg.train, ckpt, bool(resume), hooks, desc="pretrain", command="pretrain"
            )
    except BaseException as exc:  # no checkpoint yet: the replaced run comes back, or a refused new one goes
        if ddp.is_main():
            unwind(run_dir, bool(resume), exc)
        raise
    result["run_dir"] = str(run_dir)
    if cfg.data.max_tokens is not None:
        result["data"] = acc = read_account(run_dir)  # unique tokens and repeats
        if acc and acc["steps"] != result["step"]:  # a time budget planned fewer steps: the steps run
            result["data"] = at_steps(acc, result["step"])
            if ddp.is_main():
                write_account(run_dir, result["data"])
    return result


def _setup(
    cfg: PretrainConfig,
    tokenizer: Tokenizer,
    shards_dir: Path | None,
    unit_cls: type[Objective],
    run_dir: Path,
):
    """(training batches, evaluation batches, unit): shards prepared into the run when --corpus is given."""
    if shards_dir is None:
        shards_dir = ensure_shards(cfg.data, tokenizer, run_dir)
    train_shards = _check_shards(shards_dir, tokenizer)
    parts = sections(cfg, unit_cls)
    limit = cfg.data.max_tokens
    limited, note = first_tokens(train_shards, limit)  # data.max_tokens: the first N tokens, repeated
    try:
        windows, collate = unit_cls.data(limited, cfg.data.seq_len, tokenizer, *parts)
    except WarmstartError as exc:
        raise exc if limit is None else too_few(limit, exc.problem) from None
    batch = cfg.train.batch_size * ddp.world()  # torchrun: the global batch; each process takes its rows
    if limit is not None:
        check_batch(windows, limit, batch)
        steps = (cfg.train.steps, cfg.train.grad_accum)
        acc = account(windows, limited, train_shards.num_tokens, limit, batch, *steps)
        if ddp.is_main():
            print("\n".join(filter(None, [note, describe(acc)])))
            write_account(run_dir, acc)
    train = WindowBatches(windows, batch, cfg.train.seed, collate)
    val_shards = TokenShards.open(shards_dir, "validation")
    val_windows, val_collate = unit_cls.data(val_shards, cfg.data.seq_len, tokenizer, *parts)
    evals = FixedWindowBatches(val_windows, batch, cfg.train.eval_batches, cfg.train.seed, val_collate)
    return train, ddp.EvalRows(evals), build_unit(cfg, tokenizer, unit_cls), shards_dir


def _open_init(cfg: PretrainConfig, explicit: dict, unit_cls: type[Objective]):
    if cfg.embeddings.vectors:
        raise WarmstartError(
            "embeddings.vectors and --init both give the starting token embeddings",
            "drop embeddings.vectors when continuing from a pretrained model",
        )
    init = open_init(warmstart_dir(cfg.init), explicit.get("model", {}), cfg.arch)
    data = cfg.data
    if not data.tokenizer and not data.shards:
        data = dataclasses.replace(data, tokenizer=str(init.path))  # kept in the run's config for --resume
    cfg = dataclasses.replace(cfg, model=init.model, data=data)
    sections = RunCard.read(read_config(init.path)).sections
    for name in unit_cls.shape_sections:
        fields = {f.name for f in dataclasses.fields(getattr(cfg, name))} - set(explicit.get(name, {}))
        saved = {k: v for k, v in (sections.get(name) or {}).items() if k in fields}
        if saved:  # the generator's shape of an ELECTRA run, unless set: its weights then load too
            cfg = dataclasses.replace(cfg, **{name: dataclasses.replace(getattr(cfg, name), **saved)})
    return init, cfg


def _continue(unit, init, run_dir: Path) -> None:
    info = load_init_weights(unit, init)
    if ddp.is_main():
        (run_dir / "init.json").write_text(json.dumps(info, indent=2) + "\n")
    fresh = f"; fresh: {', '.join(info['fresh'])}" if info["fresh"] else ""
    print(f"continuing from {init.path}: {info['loaded_tensors']} tensors loaded{fresh}")


def _word_vectors(cfg: PretrainConfig):
    if not cfg.embeddings.vectors:
        return None

    vectors = load_vectors(cfg.embeddings.vectors)
    width = getattr(cfg.model, "embedding_size", None) or cfg.model.hidden_size
    check_dimensions(vectors.dim, width, cfg.embeddings.project)
    return vectors


def _warm_start(unit, cfg: PretrainConfig, tokenizer: Tokenizer, vectors, run_dir: Path) -> None:
    info = warm_start_embeddings(
        backbone(unit).word_embeddings, tokenizer, vectors, init_std(cfg.model), cfg.embeddings.project
    )
    info["vectors"] = cfg.embeddings.vectors
    if ddp.is_main():
        (run_dir / "warm_start.json").write_text(json.dumps(info, indent=2) + "\n")
    print(
        f"embedding warm start: {info['tokens_warm']:,} of {info['vocab_size']:,} tokens from "
        f"{info['vector_dim']}-d word vectors ({info['whole_word_tokens']:,} tokens are whole words)"
    )


def _check_shards(shards_dir: Path, tokenizer: Tokenizer) -> TokenShards:
    shards = TokenShards.open(shards_dir, "train")
    if shards.fingerprint != tokenizer.fingerprint():
        raise WarmstartError(
            f"the shards in {shards_dir} were made with another tokenizer than the one given",
            "use the tokenizer the shards were prepared with, or run `warmstart prepare` again",
        )
    return shards


def _recipe_tokenizer(cfg: PretrainConfig) -> PretrainConfig:
    """Given a corpus and no tokenizer: a tokenizer of the recipe's algorithm (ELMo: word, XLNet: unigram),
    else the family's (``FAMILY_KIND``: BERT's WordPiece), trained on the corpus's train split once, into the
    cache (``tokenizers/ALGORITHM-KEY``, the key a hash of the corpus (its files' sizes and times too), the
    split settings and the vocabulary size), and named in the run's config."""
    d = cfg.data
    algorithm = d.tokenizer_kind or FAMILY_KIND.get(cfg.arch)
    if d.tokenizer or d.shards or not algorithm or not d.corpus:
        return cfg
    sentinels = 100 if cfg.arch == "t5" else 0  # span corruption's <extra_id_N>, as `tokenizer train` adds
    key = json.dumps([_identity(d.corpus), d.split_seed, d.txt_mode, d.text_column, d.vocab_size, sentinels])
    out = cache_dir() / "tokenizers" / f"{algorithm}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    if not (out / "tokenizer.json").is_file():
        for name in d.corpus:  # unknown names and missing files fail before the training is announced
            open_dataset(name, options(d))
        print(
            f"training a {algorithm} tokenizer ({d.vocab_size:,} tokens) of {', '.join(d.corpus)} into {out}"
        )
        texts = corpus_texts(d.corpus, options(d), "train")
        train_tokenizer(texts, algorithm, d.vocab_size, out, overwrite=out.exists(), sentinels=sentinels)
    return dataclasses.replace(cfg, data=dataclasses.replace(d, tokenizer=str(out)))


def _identity(corpus: list[str]) -> list:
    """Each corpus name, and for a local file or folder its files' sizes and modification times: an edited
    corpus gets a tokenizer of its own."""
    out: list = []
    for name in corpus:
        path = Path(name)
        if is_pattern(name):  # 'docs/*.txt': the files it matches
            files = [Path(p) for p in matches(name)]
        else:
            files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        out.append([name, [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files if f.is_file()]])
    return out


def _tokenizer_and_shards_source(cfg: PretrainConfig) -> tuple[Tokenizer, Path | None]:
    if cfg.data.shards:
        shards_dir = Path(cfg.data.shards)
        read_meta(shards_dir)  # not a shards directory: said before looking for the tokenizer inside it
        tok_dir = Path(cfg.data.tokenizer) if cfg.data.tokenizer else shards_dir / "tokenizer"
        tokenizer = Tokenizer.load(tok_dir)
        return tokenizer, shards_dir
    if not cfg.data.tokenizer:
        raise WarmstartError("no tokenizer given", "pass --tokenizer DIR (from `warmstart tokenizer train`)")
    if not cfg.data.corpus:
        raise WarmstartError("no training text given", "pass --corpus NAME_OR_FILE or --shards DIR")
    for name in cfg.data.corpus:
        open_dataset(name, options(cfg.data))  # unknown names and missing files fail before any write
    return Tokenizer.load(cfg.data.tokenizer), None
