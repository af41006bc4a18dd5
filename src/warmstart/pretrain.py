"""`warmstart pretrain`: a self-supervised objective on token shards, through the one fit loop."""

from __future__ import annotations

import dataclasses
import functools
import shutil
from dataclasses import dataclass
from pathlib import Path

from warmstart import config as C
from warmstart.config import opt
from warmstart.continue_from import check_tokenizer, open_init
from warmstart.continue_from import load_weights as load_init_weights
from warmstart.data.catalog import open_dataset
from warmstart.data.corpus import DataConfig, ensure_shards, options
from warmstart.data.packing import FixedWindowBatches, WindowBatches
from warmstart.data.shards import TokenShards, read_meta
from warmstart.errors import WarmstartError
from warmstart.models.bert import BertConfig
from warmstart.objectives.denoising import DenoisingConfig
from warmstart.objectives.mlm import MLMConfig
from warmstart.objectives.nsp_sop import NSPConfig
from warmstart.objectives.replaced_token import ElectraConfig
from warmstart.objectives.span_corruption import SpanCorruptionConfig
from warmstart.pretrained import backbone, read_config
from warmstart.registry import DEFAULT_OBJECTIVE, MODELS, OBJECTIVES, lookup
from warmstart.tokenization import Tokenizer
from warmstart.train import distributed as ddp
from warmstart.train.checkpoint import Checkpointer
from warmstart.train.loop import TrainConfig, fit
from warmstart.train.rundir import open_run_dir, save_config, saved_config
from warmstart.word2vec.warm_start import EmbeddingInitConfig

MAX_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_length")


@dataclass
class PretrainConfig:
    out: str = opt("runs/pretrain", "run directory (refused if it exists, unless --resume or --overwrite)")
    arch: str = opt("bert", "model family: bert, gpt2, t5, bart (model.* keys are the family's)")
    objective: str | None = opt(
        None,
        "pretraining objective (default: the family's first): bert: mlm, mlm+nsp, mlm+sop, electra; "
        "gpt2: clm; t5: span_corruption; bart: denoising",
    )
    init: str | None = opt(
        None, "continue from this run or checkpoint (DAPT/TAPT): its model shape, tokenizer and weights"
    )
    model: BertConfig = dataclasses.field(default_factory=BertConfig)
    mlm: MLMConfig = dataclasses.field(default_factory=MLMConfig)
    nsp: NSPConfig = dataclasses.field(default_factory=NSPConfig)
    electra: ElectraConfig = dataclasses.field(default_factory=ElectraConfig)
    span_corruption: SpanCorruptionConfig = dataclasses.field(default_factory=SpanCorruptionConfig)
    denoising: DenoisingConfig = dataclasses.field(default_factory=DenoisingConfig)
    embeddings: EmbeddingInitConfig = dataclasses.field(default_factory=EmbeddingInitConfig)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)


def resolve(
    preset: str | None, config_file: str | None, flags: dict, overrides: list[str]
) -> tuple[dict, dict]:
    """Merge defaults < preset < config file < flags < overrides; returns (resolved dict, explicit dict)."""
    explicit: dict = {}
    if preset:
        explicit = C.merge(explicit, C.load_preset(preset))
    if config_file:
        explicit = C.merge(explicit, C.load_yaml(config_file))
    explicit = C.merge(explicit, flags)
    for o in overrides:
        explicit = C.merge(explicit, C.parse_override(o))
    explicit["arch"] = family(explicit)
    cfg = C.from_dict(config_class(explicit), explicit)  # validates keys and types
    return C.to_dict(cfg), explicit


@functools.cache
def _family_config(arch: str) -> type:
    config_cls, _ = lookup(MODELS, "model", arch)
    if config_cls is BertConfig:
        return PretrainConfig
    field = dataclasses.field(default_factory=config_cls)
    return dataclasses.make_dataclass(
        f"PretrainConfig_{arch}", [("model", config_cls, field)], bases=(PretrainConfig,)
    )


def family_help() -> str:
    """The model.* keys of the other families, for `--help` (the list above shows BERT's)."""
    lines = []
    for arch, (config_cls, _) in MODELS.items():
        if config_cls is not BertConfig:
            keys = ", ".join(f.name for f in dataclasses.fields(config_cls))
            lines.append(f"  arch={arch}: model.{{{keys}}}")
    return "\n\nmodel keys of the other families (model.* above are bert's):\n" + "\n".join(lines)


def family(explicit: dict) -> str:
    """The model family: ``arch`` as given, else the family of the ``init`` checkpoint, else bert."""
    arch = explicit.get("arch")
    if not arch and explicit.get("init"):
        import json

        from warmstart.pretrained import resolve_checkpoint

        config_json = json.loads((resolve_checkpoint(explicit["init"]) / "config.json").read_text())
        arch = config_json.get("warmstart", {}).get("arch", config_json.get("model_type"))
    return str(arch or "bert")


def config_class(explicit: dict) -> type:
    """PretrainConfig with the ``model`` section of the family ``explicit["arch"]`` (BERT's by default)."""
    return _family_config(str(explicit.get("arch") or "bert"))


def objective_name(cfg: PretrainConfig) -> str:
    """The objective asked for, or the family's default; one that cannot train ``arch`` is an error."""
    name = cfg.objective or DEFAULT_OBJECTIVE.get(cfg.arch, "mlm")
    unit_cls = lookup(OBJECTIVES, "objective", name)
    archs = getattr(unit_cls, "archs", ("bert",))
    if cfg.arch not in archs:
        fits = sorted(k for k, v in OBJECTIVES.items() if cfg.arch in getattr(v, "archs", ("bert",)))
        raise WarmstartError(
            f"objective {name} does not train a {cfg.arch} model (it trains {', '.join(archs)})",
            f"for arch {cfg.arch} use --objective {' or '.join(fits)}",
        )
    return name


def model_config_json(cfg: PretrainConfig, tokenizer: Tokenizer) -> dict:
    """config.json: Hugging Face field names plus a warmstart block that says how to rebuild the unit."""
    unit_cls = lookup(OBJECTIVES, "objective", cfg.objective)
    start = getattr(unit_cls, "decoder_start_id", None)
    extra = {"decoder_start_token_id": start(tokenizer)} if start else {}
    shapes = {s: dataclasses.asdict(getattr(cfg, s)) for s in getattr(unit_cls, "shape_sections", ())}
    return {
        "model_type": cfg.arch,
        "architectures": [unit_cls.hf_architecture],
        **dataclasses.asdict(cfg.model),
        "pad_token_id": tokenizer.pad_id,
        "bos_token_id": tokenizer.bos_id,
        "eos_token_id": tokenizer.eos_id,
        **extra,
        "warmstart": {
            "arch": cfg.arch,
            "objective": cfg.objective,
            "tokenizer": tokenizer.fingerprint(),
            **shapes,
        },
    }


def build_unit(cfg: PretrainConfig, tokenizer: Tokenizer):
    _, model_cls = lookup(MODELS, "model", cfg.arch)
    unit_cls = lookup(OBJECTIVES, "objective", cfg.objective)
    import torch

    torch.manual_seed(cfg.train.seed)
    return unit_cls(model_cls(cfg.model), *sections(cfg, unit_cls))


def sections(cfg: PretrainConfig, unit_cls) -> list:
    """The config sections an objective reads (e.g. mlm, or mlm and electra)."""
    return [getattr(cfg, name) for name in unit_cls.sections]


def check_fit(cfg: PretrainConfig, tokenizer: Tokenizer, explicit: dict) -> PretrainConfig:
    given = explicit.get("model", {}).get("vocab_size")
    if given is not None and given != tokenizer.vocab_size:
        raise WarmstartError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but model.vocab_size is {given}",
            "drop model.vocab_size (it is taken from the tokenizer) or use the matching tokenizer",
        )
    if cfg.data.seq_len > cfg.model.max_length:
        key = next(k for k in MAX_LENGTH_KEYS if hasattr(cfg.model, k))
        raise WarmstartError(
            f"data.seq_len {cfg.data.seq_len} exceeds model.{key} {cfg.model.max_length}",
            f"lower data.seq_len or raise model.{key}",
        )
    if cfg.data.tokenizer_kind and cfg.data.tokenizer_kind != tokenizer.kind:
        raise WarmstartError(
            f"this recipe needs a {cfg.data.tokenizer_kind} tokenizer, the one given is {tokenizer.kind}",
            f"train one with `warmstart tokenizer train --kind {cfg.data.tokenizer_kind}`",
        )
    lookup(OBJECTIVES, "objective", cfg.objective).check_tokenizer(tokenizer)
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
    flags = flags or {}
    if resume:
        explicit = C.merge(saved_config(resume), flags)
        for o in overrides:
            explicit = C.merge(explicit, C.parse_override(o))
        explicit["out"] = str(resume)
        resolved = C.to_dict(C.from_dict(config_class(explicit), explicit))
    else:
        resolved, explicit = resolve(preset, config_file, flags, list(overrides))
    cfg = C.from_dict(config_class(resolved), resolved)
    cfg = dataclasses.replace(cfg, objective=objective_name(cfg))
    init = None
    if cfg.init and not resume:  # on resume the run's own checkpoint holds the weights
        init, cfg = _open_init(cfg, explicit)
    tokenizer, shards_dir = _tokenizer_and_shards_source(cfg)
    if init is not None:  # with --shards, the tokenizer is the one the shards were made with
        check_tokenizer(init, tokenizer, "shards' tokenizer" if shards_dir else "tokenizer given")
    cfg = check_fit(cfg, tokenizer, explicit)
    if shards_dir is not None:
        _check_shards(shards_dir, tokenizer)  # before anything is written
    vectors = _word_vectors(cfg) if not resume else None  # a bad vectors file fails before any write too
    unit_cls = lookup(OBJECTIVES, "objective", cfg.objective)
    ddp.init(cfg.train.device, cfg.train.dist_timeout)  # torchrun: join the other processes

    def start():  # torchrun: the first process creates the run directory (and shards), the others read it
        main = ddp.is_main()
        run_dir = open_run_dir(cfg.out, resume=bool(resume) or not main, overwrite=overwrite)
        try:
            if not resume and main:
                save_config(run_dir, C.to_dict(cfg))
            train, evals, unit = _setup(cfg, tokenizer, shards_dir, unit_cls, run_dir)
            if init is not None:
                _continue(unit, init, run_dir)
            if vectors is not None:
                _warm_start(unit, cfg, tokenizer, vectors, run_dir)
        except WarmstartError:
            if not resume and main:  # the directory was created just above: a late error leaves nothing
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        return run_dir, train, evals, unit

    run_dir, train, evals, unit = ddp.main_first(start)
    ckpt = Checkpointer(run_dir, model_config_json(cfg, tokenizer), tokenizer)
    result = fit(unit, train, evals, cfg.train, ckpt, resume=bool(resume), hooks=hooks, desc="pretrain")
    result["run_dir"] = str(run_dir)
    return result


def _setup(cfg: PretrainConfig, tokenizer: Tokenizer, shards_dir: Path | None, unit_cls, run_dir: Path):
    """(training batches, evaluation batches, unit): shards prepared into the run when --corpus is given."""
    if shards_dir is None:
        shards_dir = ensure_shards(cfg.data, tokenizer, run_dir)
    train_shards = _check_shards(shards_dir, tokenizer)
    parts = sections(cfg, unit_cls)
    windows, collate = unit_cls.data(train_shards, cfg.data.seq_len, tokenizer, *parts)
    batch = cfg.train.batch_size * ddp.world()  # torchrun: the global batch; each process takes its rows
    train = WindowBatches(windows, batch, cfg.train.seed, collate)
    val_shards = TokenShards.open(shards_dir, "validation")
    val_windows, val_collate = unit_cls.data(val_shards, cfg.data.seq_len, tokenizer, *parts)
    evals = FixedWindowBatches(val_windows, batch, cfg.train.eval_batches, cfg.train.seed, val_collate)
    return train, ddp.EvalRows(evals), build_unit(cfg, tokenizer)


def _open_init(cfg: PretrainConfig, explicit: dict):
    if cfg.embeddings.vectors:
        raise WarmstartError(
            "embeddings.vectors and --init both give the starting token embeddings",
            "drop embeddings.vectors when continuing from a pretrained model",
        )
    init = open_init(cfg.init, explicit.get("model", {}), cfg.arch)
    data = cfg.data
    if not data.tokenizer and not data.shards:
        data = dataclasses.replace(data, tokenizer=str(init.path))  # kept in the run's config for --resume
    cfg = dataclasses.replace(cfg, model=init.model, data=data)
    block = read_config(init.path).get("warmstart", {})
    for name in getattr(lookup(OBJECTIVES, "objective", cfg.objective), "shape_sections", ()):
        fields = {f.name for f in dataclasses.fields(getattr(cfg, name))} - set(explicit.get(name, {}))
        saved = {k: v for k, v in (block.get(name) or {}).items() if k in fields}
        if saved:  # the generator's shape of an ELECTRA run, unless set: its weights then load too
            cfg = dataclasses.replace(cfg, **{name: dataclasses.replace(getattr(cfg, name), **saved)})
    return init, cfg


def _continue(unit, init, run_dir: Path) -> None:
    import json

    info = load_init_weights(unit, init)
    if ddp.is_main():
        (run_dir / "init.json").write_text(json.dumps(info, indent=2) + "\n")
    fresh = f"; fresh: {', '.join(info['fresh'])}" if info["fresh"] else ""
    print(f"continuing from {init.path}: {info['loaded_tensors']} tensors loaded{fresh}")


def _word_vectors(cfg: PretrainConfig):
    if not cfg.embeddings.vectors:
        return None
    from warmstart.word2vec.io import load_vectors
    from warmstart.word2vec.warm_start import check_dimensions

    vectors = load_vectors(cfg.embeddings.vectors)
    width = getattr(cfg.model, "embedding_size", None) or cfg.model.hidden_size
    check_dimensions(vectors.dim, width, cfg.embeddings.project)
    return vectors


def _warm_start(unit, cfg: PretrainConfig, tokenizer: Tokenizer, vectors, run_dir: Path) -> None:
    import json

    from warmstart.word2vec.warm_start import warm_start_embeddings

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


def init_std(model_cfg) -> float:
    """The std of a family's normal initialisation (T5 scales embeddings by its factor instead)."""
    for key in ("initializer_range", "init_std"):
        if hasattr(model_cfg, key):
            return getattr(model_cfg, key)
    return model_cfg.initializer_factor


def _check_shards(shards_dir: Path, tokenizer: Tokenizer) -> TokenShards:
    shards = TokenShards.open(shards_dir, "train")
    if shards.fingerprint != tokenizer.fingerprint():
        raise WarmstartError(
            f"the shards in {shards_dir} were made with another tokenizer than the one given",
            "use the tokenizer the shards were prepared with, or run `warmstart prepare` again",
        )
    return shards


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
