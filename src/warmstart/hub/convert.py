"""Hugging Face interop: ``import_hf`` turns a transformers checkpoint into a warmstart model directory (the
sort `warmstart pretrain` writes, so `finetune --init` and `pretrain --init` take it); ``export_hf`` turns a
warmstart run into a directory that transformers' Auto classes load unchanged: the checkpoint the run's
scores come from (a finetuned run's best/, :mod:`warmstart.hub.runs`), a tokenizer that passes segment ids
where the model has them, a model card (README.md, :mod:`warmstart.hub.model_card`) and, for a LoRA run, its
adapters in PEFT's format (:mod:`warmstart.hub.adapter`).

Families (model_type): bert (BertForMaskedLM; with or without ``bert.``; without an MLM head the head starts
fresh; BertForPreTraining: mlm+nsp), roberta (RobertaForMaskedLM), albert (AlbertForMaskedLM;
AlbertForPreTraining: mlm+sop), electra (ElectraForPreTraining: the discriminator, its generator an
ElectraForMaskedLM in generator/ or starting fresh, see hub/electra_generator.py; an ElectraForMaskedLM
alone: mlm), gpt2 (GPT2LMHeadModel; with or without ``transformer.``), t5
(T5ForConditionalGeneration), bart (BartForConditionalGeneration; with or without ``model.``). The encoder
families' task classes (*ForSequenceClassification, *ForTokenClassification, *ForQuestionAnswering,
*ForMultipleChoice) import as
finetuned runs and finetuned runs export as them (:mod:`warmstart.hub.heads`). Weight names go through each
family's key map (:mod:`warmstart.models.keymap`); config fields keep their Hugging Face names (the per-family
tables live in :mod:`warmstart.hub.families`, tokenizers in :mod:`warmstart.hub.tokenizer`). Weights are read
from safetensors, or from ``pytorch_model.bin`` with ``torch.load(weights_only=True)`` only: never unpickled.

RoBERTa's positions: transformers numbers the tokens from ``pad_token_id + 1`` and skips padding tokens
(``create_position_ids_from_input_ids``), warmstart numbers them 0, 1, ... whatever they are. Import drops the
first ``pad_token_id + 1`` rows of the table and export puts that many zero rows in front, so the outputs are
equal for right-padded (or unpadded) batches; with LEFT padding the real tokens of a padded row get other
positions in the two libraries (transformers': as if unpadded; warmstart's: shifted by the padding).
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
import warnings
from pathlib import Path

import torch
from safetensors.torch import save_file

from warmstart.atomic import check_writable
from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.load import model_config
from warmstart.checkpoints.sentence import declared
from warmstart.errors import WarmstartError
from warmstart.hub.adapter import adapter_files, base_state, lora_of, merge_adapters
from warmstart.hub.config_checks import check_sizes
from warmstart.hub.electra_generator import export_generator, read_generator
from warmstart.hub.families import family, pretraining_class
from warmstart.hub.families.base import TOKEN_IDS, TOP_LEVEL, Family, refuse
from warmstart.hub.families.configs import config_from_hf, config_to_hf, given_fields
from warmstart.hub.generation_config import write_generation_config
from warmstart.hub.heads import base_name, export_family, export_task, import_task, task_unit, warn_heads
from warmstart.hub.hub_model import hub_snapshot, is_hub_id
from warmstart.hub.model_card import model_card
from warmstart.hub.runs import choose
from warmstart.hub.runs import run_config as run_settings
from warmstart.hub.tensors import from_hf_state, padded, to_hf_state
from warmstart.hub.tokenizer import load_hf_tokenizer, save_for_transformers
from warmstart.outputs import mark, refuse_foreign
from warmstart.pretraining.build import build_unit, model_config_json
from warmstart.pretraining.config import config_class
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.checkpoint import atomic_dir, read_tensors, save_weights, write_json

FIX_OUT = "pass --overwrite to replace it, or choose another --out"


EMD_DROPPED = (
    "not exported: the enhanced mask decoder (mlm.emd), used in pretraining only; transformers' {} has none, "
    "so its MLM head reads the last layer (finetuning reads the encoder the same way)"
)


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def check_out(out: Path, overwrite: bool, *sources: Path) -> None:
    """Refuse a non-empty ``out`` unless ``overwrite``, and an ``out`` that holds one of ``sources``."""
    refuse(out.exists() and not out.is_dir(), f"{out} exists and is not a directory", "choose another --out")
    check_writable(out)
    refuse(out.is_dir() and any(out.iterdir()) and not overwrite, f"{out} already exists", FIX_OUT)
    for s in sources:
        inside = out.resolve() == s.resolve() or out.resolve() in s.resolve().parents
        refuse(inside, f"--out {out} would replace the model it reads", "choose another --out")
    if overwrite:  # only a directory warmstart made is replaced
        refuse_foreign(out)


# ---------------------------------------------------------------------------------------------- reading
def read_state(src: Path) -> dict:
    """All tensors of an HF directory: model.safetensors, sharded safetensors, else pytorch_model.bin."""

    for name, load in (("model.safetensors", read_tensors), ("pytorch_model.bin", _load_bin)):
        if (src / name).is_file():
            return load(src / name)
        index = src / f"{name}.index.json"
        if index.is_file():
            shards = _index_shards(index)
            lost = [s for s in shards if not (src / s).is_file()]
            refuse(bool(lost), f"{index} names missing shards: {', '.join(lost[:3])}", "download all shards")
            return {k: v for s in shards for k, v in load(src / s).items()}
    raise WarmstartError(
        f"no weights in {src} (model.safetensors, model.safetensors.index.json or pytorch_model.bin)",
        "pass the directory transformers' save_pretrained wrote",
    )


def _index_shards(index: Path) -> list[str]:
    """The shard files a sharded checkpoint's index names; each must be a plain file name inside the
    checkpoint directory (an index naming /etc/passwd or ../x is refused, never opened)."""
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WarmstartError(
            f"{index} is not valid JSON ({exc})", "pass the directory save_pretrained wrote"
        ) from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    refuse(not isinstance(weight_map, dict) or not weight_map, f"{index} has no weight_map",
           "pass the directory save_pretrained wrote")  # fmt: skip
    shards = sorted({str(v) for v in weight_map.values()})
    outside = [s for s in shards if Path(s).name != s or s in (".", "..")]
    refuse(bool(outside), f"{index} names shard files outside its directory: {', '.join(outside[:3])[:160]}",
           "use an index whose shards are file names in the checkpoint directory")  # fmt: skip
    return shards


def _load_bin(path: Path) -> dict:
    try:
        with warnings.catch_warnings():  # torch's note on the pickle protocol: the error below says enough
            warnings.simplefilter("ignore", UserWarning)
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL (\S+)", str(exc))
        names = f": it names {found.group(1)}" if found else ""
        raise WarmstartError(
            f"{path} is not a plain weights file (loading it would run code{names})",
            "warmstart loads weights only: convert it to model.safetensors where you trust its source",
        ) from None
    except Exception as exc:
        raise WarmstartError(f"{path} could not be read ({_short(exc)})", "download it again") from None
    refuse(
        not isinstance(state, dict) or not all(torch.is_tensor(v) for v in state.values()),
        f"{path} does not hold a dictionary of tensors",
        "pass a checkpoint written by transformers",
    )
    return state


def resolve_source(src: str | Path) -> Path:
    """A local model directory, or a hub id (``hf:`` in front is allowed, as for datasets): its snapshot,
    downloaded or from huggingface_hub's cache offline (hub/hub_model.py)."""
    path = Path(src)
    if path.is_dir():
        return path
    src = str(src).removeprefix("hf:")
    if not is_hub_id(src):
        raise WarmstartError(
            f"{src} is not a model directory", "pass a directory with config.json and weights"
        )
    return hub_snapshot(src)


def _canonical(state: dict, fam: Family) -> dict:
    """Names as in the LM-head class: the base prefix added when missing; LayerNorm gamma/beta renamed."""
    state = {re.sub(r"\.gamma$", ".weight", re.sub(r"\.beta$", ".bias", k)): v for k, v in state.items()}
    if not fam.prefix or any(k.startswith(fam.prefix) for k in state):
        return state
    return {(k if k.startswith(TOP_LEVEL) else fam.prefix + k): v for k, v in state.items()}


def _config_json(d: Path, what: str) -> dict:
    refuse(not (d / "config.json").is_file(), f"no config.json in {d}", f"pass {what}")
    try:
        return json.loads((d / "config.json").read_text(encoding="utf-8"))
    except ValueError as exc:
        raise WarmstartError(
            f"{d / 'config.json'} is not valid JSON ({_short(exc)})", f"pass {what}"
        ) from None


def _read_hf(d: Path) -> tuple[dict, dict]:
    """config.json and the tensors of a transformers directory, named as in its family's LM class."""
    hf = _config_json(d, "a directory saved by transformers (config.json + weights)")
    fam = family(hf.get("model_type"), d)  # an unsupported model type: said before the weights are read
    check_sizes(*given_fields(hf["model_type"], hf), str(d / "config.json"))  # -2 layers: before anything
    return hf, _canonical(read_state(d), fam)


def _generator(d: Path, given, fam: Family, hf: dict, task, cfg):
    """The generator beside an ELECTRA discriminator: ``given``, else d/generator when it holds one."""
    whole = bool(fam.fresh) and task is None  # an ElectraForPreTraining
    name = next(iter(hf.get("architectures") or []), fam.hf_class)
    refuse(given is not None and not whole, f"--generator goes with an ElectraForPreTraining, not a {name}",
           "drop --generator")  # fmt: skip
    g = resolve_source(given) if given is not None else d / "generator"
    found = given is not None or (g / "config.json").is_file()
    return read_generator(*_read_hf(g), g, cfg) if whole and found else None


def import_hf(src: str | Path, out: str | Path, overwrite: bool = False, generator=None) -> Path:
    """Convert the transformers model ``src`` (a directory or a hub id) into the warmstart model directory
    ``out`` (config.json, model.safetensors with the pretraining unit's names, tokenizer); returns ``out``.
    An ElectraForPreTraining takes its generator from ``generator`` (an ElectraForMaskedLM directory or hub
    id), else from SRC/generator/ when there is one: the electra run is then whole."""

    out = Path(out)
    check_out(out, overwrite)
    d = resolve_source(src)
    check_out(out, overwrite, d)
    hf, state = _read_hf(d)
    name = hf.get("model_type")
    fam = padded(pretraining_class(name, hf=hf, state=state), hf.get("pad_token_id"))
    task = import_task(name, fam, hf, state, hf.get("max_position_embeddings", 512) - fam.position_offset)
    cfg = config_from_hf(name, hf, state, str(d / "config.json"))
    cfg = dataclasses.replace(cfg, pooler=True) if task and task.get("pooler") else cfg  # ELECTRA's summary
    gen = _generator(d, generator, fam, hf, task, cfg)
    if gen is not None:
        check_out(out, overwrite, gen.where)
    tokenizer = load_hf_tokenizer(d, getattr(cfg, "max_length", None))
    n, v, arch = tokenizer.vocab_size, cfg.vocab_size, fam.arch
    refuse(n > v or (arch == "bert" and n != v), f"the tokenizer in {d} has {n} tokens, the model {v}",
           "pass the tokenizer the model was trained with")  # fmt: skip
    shape = {"electra": gen.section} if gen else {}
    pc = config_class({"arch": arch})(arch=arch, objective=fam.objective, model=cfg, **shape)
    config_json = model_config_json(pc, tokenizer)
    for key in TOKEN_IDS:
        value = hf.get(key)
        if key in config_json and value is not None:
            config_json[key] = value[0] if isinstance(value, list) else value
    card = dataclasses.replace(RunCard.read(config_json), imported_from=str(src), hf_model_type=name)
    if (sentence := declared(d)) is not None:  # a sentence-transformers model: its pooling, for embed/encode
        card.sections["sentence"] = sentence
    config_json = card.write(config_json)
    with torch.random.fork_rng(devices=[]):
        unit = build_unit(pc, tokenizer)
        if task is not None:  # a finetuned run: the task's head on the encoder, config.json with the task
            unit, config_json = task_unit(task, unit.encoder, tokenizer, config_json)
    weights, fresh, dropped = from_hf_state(fam, cfg, state, unit.state_dict(), d)
    weights.update(task["tensors"] if task else {})
    if gen is not None:  # the generator is no longer fresh
        weights.update(gen.weights(unit.state_dict(), weights))
        fam = dataclasses.replace(fam, fresh=())
    missing, _ = unit.load_state_dict(weights, strict=False)
    lost = [m for m in missing if m not in fresh and not m.startswith(fam.fresh)]
    if lost:  # from_hf_state checked the names: this would be a key-map bug
        raise RuntimeError(f"not loaded: {lost[:3]}")
    warn_heads(src, fam, fresh, dropped, finetuned=task is not None)

    def write(tmp: Path) -> None:
        write_json(config_json, tmp / "config.json")
        save_weights(unit, tmp / "model.safetensors")
        tokenizer.save(tmp)
        mark(tmp, "import")

    return atomic_dir(out, write)


def export_hf(
    run: str | Path,
    out: str | Path,
    overwrite: bool = False,
    checkpoint: str | None = None,
    adapter: bool = True,
    head: str | None = None,
) -> Path:
    """Write the model of the warmstart run or model directory ``run`` as a transformers directory ``out``:
    config.json, model.safetensors, a tokenizer AutoTokenizer loads and a model card (README.md); returns
    ``out``. The checkpoint is ``checkpoint`` (best, final, step-N), else the one the run's scores and
    commands use (:func:`warmstart.hub.runs.choose`); a LoRA run also gets its adapters in PEFT's format
    (OUT/adapter, OUT/base: :mod:`warmstart.hub.adapter`) unless ``adapter`` is false."""

    chosen = choose(run, checkpoint).one_task(head)  # head: that head of a multitask encoder
    out, d = Path(out), chosen.path
    check_out(out, overwrite, Path(run), d)
    run_config = _config_json(d, "a run or model directory written by warmstart")
    card = RunCard.read(run_config)
    cfg, model_cls = model_config(run_config)
    tokenizer = Tokenizer.load(d)
    arch = export_family(card, cfg, tokenizer.algorithm)
    family(arch, d)  # refuses a model type transformers has no class for
    fam = padded(pretraining_class(arch, card.objective), run_config.get("pad_token_id"))
    settings = run_settings(chosen.root)
    lora = lora_of(settings, chosen.root) if card.finetuned else None
    state = merge_adapters(read_tensors(d / "model.safetensors"), lora, d)
    with torch.device("meta"):
        want = {fam.unit + k: v.shape for k, v in model_cls(cfg).state_dict().items()}
    bad = [k for k, s in want.items() if k not in state or state[k].shape != s]
    refuse(bool(bad), f"the weights in {d} do not fit its config.json: {', '.join(bad[:3])}",
           "pass a run or checkpoint written by warmstart")  # fmt: skip
    hf_config, tensors, generator = _export_model(arch, fam, cfg, card, state, run_config, d, want.keys())
    peft = _peft(arch, fam, cfg, card, state, run_config, lora, out, d) if lora and adapter else None
    max_length = (card.task or {}).get("max_length")
    readme = model_card(chosen, hf_config, card, settings, out, peft is not None)

    def write(tmp: Path) -> None:
        _write_hf(tmp, hf_config, tensors, tokenizer, max_length)
        if generator is not None:
            _write_hf(tmp / "generator", *generator, tokenizer)
        if peft is not None:
            _write_hf(tmp / "base", *peft[:2], tokenizer, max_length)
            (tmp / "adapter").mkdir()
            write_json(peft[2], tmp / "adapter" / "adapter_config.json")
            save_file(peft[3], str(tmp / "adapter" / "adapter_model.safetensors"), metadata={"format": "pt"})
        (tmp / "README.md").write_text(readme, encoding="utf-8")
        mark(tmp, "export")

    return atomic_dir(out, write)


def _export_model(arch: str, fam: Family, cfg, card, state: dict, run_config: dict, d: Path, model_keys=()):
    """(transformers config.json, tensors, ELECTRA's generator or None) of a run's unit tensors ``state``
    (``model_keys``: the unit names of the model's own tensors, for a pretrained model)."""
    heads, generator = {ours for ours, _ in fam.heads}, None
    if card.finetuned:
        hf_class, tensors, task_config = export_task(arch, fam, cfg, card, state)
    else:
        kept = set(model_keys) | heads
        extra = sorted({k.split(".")[0] for k in state if k not in kept and not k.startswith(fam.fresh)})
        if extra:
            warnings.warn(
                f"not exported (no transformers {fam.hf_class} equivalent): {', '.join(extra)}", stacklevel=3
            )
        if "emd" in card.sections:  # no weights of its own: the export is the encoder and head as they are
            warnings.warn(EMD_DROPPED.format(fam.hf_class), stacklevel=3)
        hf_class = fam.hf_class if heads <= state.keys() else base_name(fam) + "Model"  # without its head
        fam = fam if hf_class == fam.hf_class else dataclasses.replace(fam, prefix="")
        tensors, task_config = to_hf_state(fam, cfg, state), {}
    hf_config = {**config_to_hf(arch, cfg, run_config, hf_class), **task_config}
    if fam.fresh and not card.finetuned:  # ELECTRA's generator: an ElectraForMaskedLM of its own
        generator = export_generator(cfg, card, state, run_config, d)
    return hf_config, tensors, generator


def _peft(arch: str, fam: Family, cfg, card, state: dict, run_config: dict, lora, out: Path, d: Path):
    """(base config.json, base tensors, adapter_config.json, adapter tensors) of a LoRA run: the --init
    encoder with the run's head as the same task class, and the adapters apart (hub/adapter.py)."""
    base, deltas, tolerance = base_state(state, lora, fam, d)
    hf_config, tensors, _ = _export_model(arch, fam, cfg, card, base, run_config, d)
    encoder = {k: v for k, v in base.items() if k.startswith(fam.unit)}
    body = to_hf_state(dataclasses.replace(fam, heads=()), dataclasses.replace(cfg, pooler=False), encoder)
    head = {k: v for k, v in tensors.items() if k not in body}
    where = str((out / "base").resolve())
    config, adapters = adapter_files(deltas, tolerance, head, lora, fam, cfg, card.task_name, where)
    return hf_config, tensors, config, adapters


def _write_hf(d: Path, config: dict, tensors: dict, tokenizer, max_length: int | None = None) -> None:
    d.mkdir(exist_ok=True)
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    config = {**config, "dtype": str(next(iter(tensors.values())).dtype).removeprefix("torch.")}
    write_json(config, d / "config.json")
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    save_for_transformers(tokenizer, d, config, max_length)
    write_generation_config(d, config)
