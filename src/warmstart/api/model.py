"""``warmstart.load(path, device=None, dtype=None)``: a run, a checkpoint or a transformers directory as one
object, with what its model can do. ``task`` says which: a finetuned task (classification, tagging,
extractive_qa, multiple_choice, text_to_text), ``encoder`` (a pretrained encoder: encode, and fill_mask when
it kept its MLM head) or ``generator`` (gpt2, t5, bart: generate). Each part loads when first used, on the
model's device and in its dtype; every method computes there.

The methods take the arguments Hugging Face users know: ``predict(texts, top_k=None)`` as
``pipeline("text-classification")``, ``encode(texts, batch_size=, normalize_embeddings=,
convert_to_tensor=)`` and ``similarity`` as sentence-transformers, ``generate(prompt, max_new_tokens=,
do_sample=, num_return_sequences=, ...)`` as ``generate`` and ``pipeline("text-generation")``."""

from __future__ import annotations

import io
import shutil
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, TypeAlias

import torch

from warmstart.api import checks
from warmstart.api.configs import PathLike
from warmstart.api.evaluate_call import evaluate_model
from warmstart.api.pipeline_call import PIPELINE_DEFAULT, call
from warmstart.api.python_errors import speaks_python
from warmstart.config import from_dict
from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig
from warmstart.hub.convert import export_hf
from warmstart.hub.on_the_fly import warmstart_dir
from warmstart.inference.encode import sentence_vectors
from warmstart.inference.fill_mask import FillMask
from warmstart.inference.generate import run_generate
from warmstart.inference.load import SavedModel
from warmstart.inference.predict import Predictor
from warmstart.nn.pooling import POOLING
from warmstart.tokenization.tokenizer import Tokenizer
from warmstart.train.loop import pick_device

Device: TypeAlias = "str | torch.device"
DTYPES = {"float32": torch.float32, "fp32": torch.float32, "float": torch.float32,
          "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
          "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}  # fmt: skip


@speaks_python("load")
def load(
    path: PathLike,
    device: Device | None = None,
    dtype: torch.dtype | str | None = None,
    head: str | None = None,
) -> Model:
    """The model of a run (a finetune's best checkpoint, a pretraining's final one), of a checkpoint
    directory, or of a transformers directory (imported once into the cache, said in one line).

    ``device``: "cuda", "cuda:1", "cpu" or a ``torch.device``; None: CUDA when there is one, else the CPU.
    ``dtype``: the weights' float type, ``torch.float16``/``bfloat16``/``float32`` or its name ("fp16",
    "bf16"...); None keeps float32 (fill_mask always runs in float32). ``head``: a multitask encoder run's
    head (its dataset's name), which then behaves as the single-task model of its task."""
    where: str = checks.path("load", "path", path)
    checks.device("load", "device", device)
    checks.word("load", "head", head, none=True)
    _dtype(dtype)
    saved = SavedModel(warmstart_dir(where) or where, use="loading", head=head)
    return Model(saved, device=device, dtype=dtype)


def _device(device: Device | None) -> torch.device:
    """The device to compute on: None is CUDA when there is one, else the CPU."""
    if device is None:
        return pick_device("auto")
    name = str(device)
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise WarmstartError(
            f"device={name!r} but no CUDA device is available",
            'use device="cpu", or device=None (CUDA if any)',
        )
    try:
        return torch.device(name)
    except RuntimeError:
        raise WarmstartError(f"unknown device {name!r}", 'use "cpu", "cuda" or "cuda:N"') from None


def _dtype(dtype: torch.dtype | str | None) -> torch.dtype | None:
    """A float dtype, from a ``torch.dtype`` or its name; None keeps float32."""
    if isinstance(dtype, torch.dtype) and not dtype.is_floating_point:
        raise checks.ArgumentValueError(
            f"dtype must be a float type, got {dtype}", "use torch.float16, torch.bfloat16 or torch.float32"
        )
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise WarmstartError(f"unknown dtype {dtype!r}", "use torch.float16, torch.bfloat16 or torch.float32")
    return DTYPES[name]


class Model:
    """A loaded model: ``predict``, ``encode``, ``similarity``, ``fill_mask``, ``generate`` (each where the
    model can), ``task`` (what it does, as in the module doc), ``tokenizer``, ``config`` (its config.json),
    ``model`` (the torch module), ``device``, ``dtype``, ``to(device, dtype)``, ``save``, ``export_hf``. Its
    parts load through ``saved`` (inference/load.py), each once."""

    def __init__(
        self, saved: SavedModel, device: Device | None = None, dtype: torch.dtype | str | None = None
    ):
        self.saved, self.path, self.config = saved, saved.path, saved.config
        self.card = saved.card
        self.task: str = saved.task  # the finetuned task's name, or encoder or generator (module doc)
        self.device = _device(device)
        self.dtype = _dtype(dtype)

    @property
    def kind(self) -> str:
        """The old name of ``task`` (read-only)."""
        return self.task

    def __repr__(self) -> str:
        return f"Model({self.task}, {self.card.arch}, {str(self.path)!r}, device={str(self.device)!r})"

    @speaks_python("Model.to")
    def to(self, device: Device | None = None, dtype: torch.dtype | str | None = None) -> Model:
        """Move the model (the parts loaded so far, and those loaded later) to ``device`` and/or ``dtype``."""
        checks.device("to", "device", device)
        if device is not None:
            self.device = _device(device)
        if dtype is not None:
            self.dtype = _dtype(dtype)
        for module in self._loaded_modules():
            module.to(self.device, self.dtype)
        if "_predictor" in self.__dict__:
            self._predictor.device = self.device
        if "_filler" in self.__dict__:
            del self.__dict__["_filler"]  # reloads on the new device when next used
        return self

    def _loaded_modules(self) -> list[torch.nn.Module]:
        parts = self.__dict__
        found = [parts["_predictor"].unit] if "_predictor" in parts else []
        found += [parts["_encoder"]] if "_encoder" in parts else []
        return found + ([parts["_generator"][0]] if "_generator" in parts else [])

    @cached_property
    def tokenizer(self) -> Tokenizer:
        return Tokenizer.load(self.path)

    @property
    def model(self) -> torch.nn.Module:
        """The torch module: a finetune's task unit (encoder + head), a generator, or the encoder."""
        if self.card.finetuned:
            return self._predictor.unit
        return self._generator[0] if self.task == "generator" else self._encoder

    @cached_property
    def _predictor(self) -> Predictor:
        return Predictor.of(self.saved, device=str(self.device), dtype=self.dtype)

    @cached_property
    def _encoder(self) -> torch.nn.Module:
        encoder, _, _ = self.saved.encoder
        return encoder.eval().to(self.device, self.dtype)

    @cached_property
    def _generator(self) -> tuple[Any, Tokenizer, dict]:
        model, tokenizer, config_json = self.saved.generator
        return model.to(self.device, self.dtype), tokenizer, config_json

    @speaks_python("Model.predict")
    def predict(self, inputs: Any, batch_size: int = 64, top_k: int | None = 1) -> Any:
        """Predictions of a finetuned model: for one input a result, for a list of inputs a list, in order.
        An input is a text, a (text, text_pair) tuple, or a dict with the task's keys ({"question",
        "context"}, {"context", "choices"}, {"tokens"}). ``batch_size``: inputs per forward pass.

        ``top_k=1`` (the default): a dict with the text, the ``label`` and every label's ``probabilities``.
        A classifier also ranks: ``top_k=None`` gives every label as ``[{"label", "score"}, ...]`` from the
        best down (as transformers' ``pipeline("text-classification", top_k=None)``), ``top_k=k`` the best
        k."""
        items, single = checks.predict_inputs("predict", inputs)
        batch_size = checks.whole("predict", "batch_size", batch_size, 1, example="batch_size=64")
        top_k = checks.whole("predict", "top_k", top_k, 1, none=True, example="top_k=3",
                             must="a positive whole number or None")  # fmt: skip
        self._need(self.card.finetuned, "predict", "finetune it first (warmstart.finetune)")
        self._predictor.batch_size = batch_size
        where = ["inputs"] if single else [f"inputs[{i}]" for i in range(len(items))]
        records = [self._predictor.record(x, i + 1, where[i]) for i, x in enumerate(items)]
        out = self._predictor.predict(records)
        results: list[Any] = out if top_k == 1 else [self._ranked(p, top_k) for p in out]
        return results[0] if single else results

    @speaks_python("Model.__call__")
    def __call__(
        self, inputs: Any, top_k: Any = PIPELINE_DEFAULT, batch_size: int = 64, **settings: Any
    ) -> Any:
        """The model called as a transformers pipeline, answering in its layout: a classifier as
        ``pipeline("text-classification")``, a generator as ``pipeline("text-generation")`` (``settings``:
        ``generate``'s keywords), other tasks as ``predict`` (api/pipeline_call.py)."""
        return call(self, inputs, top_k, batch_size, settings)

    @speaks_python("Model.evaluate")
    def evaluate(self, data: Any, split: str | None = None, text_column: str | None = None,
                 text_pair_column: str | None = None, label_column: str | None = None,
                 target_column: str | None = None) -> dict:  # fmt: skip
        """Metrics on labeled ``data`` (as ``Trainer.evaluate``, `warmstart evaluate`): rows in memory or a
        file scored whole, a name or folder's ``split`` (test); {"metrics", "examples", "breakdown", ...}."""
        self._need(self.card.finetuned, "evaluate", "finetune it first (warmstart.finetune)")
        columns = dict(text_column=text_column, text_pair_column=text_pair_column,
                       label_column=label_column, target_column=target_column)  # fmt: skip
        return evaluate_model(self, data, split, columns)

    def _ranked(self, prediction: dict, top_k: int | None) -> list[dict]:
        scores = prediction.get("probabilities")
        if not isinstance(scores, dict):
            raise WarmstartError(
                f"top_k ranks class labels, and a {self.task} model has none to rank", "leave top_k=1"
            )
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])
        return [{"label": label, "score": score} for label, score in ranked[:top_k]]

    @speaks_python("Model.encode")
    def encode(
        self,
        texts: str | Sequence[str],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: Device | None = None,
        normalize_embeddings: bool = False,
        pooling: str | None = None,
        normalize: bool | None = None,
        layer: str = "last",
        max_length: int | None = None,
        prompt: str | None = None,
    ) -> Any:
        """Sentence vectors, as sentence-transformers' ``encode``: a (len(texts), D) float32 numpy array (one
        text: a (D,) vector); ``convert_to_tensor`` a torch tensor on the model's device, neither a list of
        tensors. ``batch_size`` texts per forward pass (32); ``show_progress_bar`` a bar over the batches;
        ``device`` moves the model there first (as sentence-transformers does).

        The pooling and normalization are the ones the model declares (all-MiniLM-L6-v2: mean, unit
        length), else the [CLS] state as is; ``normalize_embeddings=True`` scales to unit length in any
        case, ``normalize=False`` turns a declared normalization off, ``pooling`` ("cls", "mean", "max") and
        ``layer`` (inference/encode.py) choose others; ``max_length`` tokens (default: the declared length,
        else the model's positions, at most 512); ``prompt`` text put before each text ("query: ", as
        sentence-transformers' ``prompt``)."""
        batch, single = checks.texts("encode", "texts", texts)
        if prompt is not None:
            batch = [checks.text("encode", "prompt", prompt) + t for t in batch]
        batch_size = checks.whole("encode", "batch_size", batch_size, 1, example="batch_size=32")
        switches = {"show_progress_bar": show_progress_bar, "normalize": normalize,
                    "convert_to_numpy": convert_to_numpy, "convert_to_tensor": convert_to_tensor,
                    "normalize_embeddings": normalize_embeddings}  # fmt: skip
        for name, value in switches.items():  # None: the default (show_progress_bar, normalize)
            checks.flag("encode", name, value, none=name in ("show_progress_bar", "normalize"))
        pooling = checks.word("encode", "pooling", pooling, POOLING, none=True)
        if isinstance(layer, int) and not isinstance(layer, bool):
            layer = str(layer)  # an index into [embeddings, layer 1, ...]
        layer = checks.word("encode", "layer", layer) or "last"
        max_length = checks.whole("encode", "max_length", max_length, 1, none=True, example="max_length=128")
        checks.device("encode", "device", device)
        self._need(self.task != "generator", "encode", "encode with an encoder run (bert, roberta, ...)")
        if device is not None:
            self.to(device)
        if normalize_embeddings:
            normalize = True
        progress = bool(show_progress_bar)
        vectors, _, _ = sentence_vectors(self._encoder, self.tokenizer, self.card, batch, layer, pooling,
                                         normalize, max_length, batch_size, progress)  # fmt: skip
        if convert_to_tensor:
            out: Any = torch.from_numpy(vectors).to(self.device)
        elif convert_to_numpy:
            out = vectors
        else:
            out = list(torch.from_numpy(vectors).to(self.device))
        return out[0] if single else out

    @speaks_python("Model.similarity")
    def similarity(self, a: Any, b: Any) -> torch.Tensor:
        """The (len(a), len(b)) cosine similarity matrix, as sentence-transformers' ``model.similarity``:
        ``a`` and ``b`` are embeddings (numpy arrays or tensors, one vector or a matrix each) or texts (a
        string or a list of strings, encoded first). A float32 tensor on the CPU."""

        def matrix(x: Any, name: str) -> torch.Tensor:
            if isinstance(x, str) or (isinstance(x, list | tuple) and any(isinstance(i, str) for i in x)):
                x = self.encode(checks.texts("similarity", name, x)[0])
            t = torch.from_numpy(checks.embeddings("similarity", name, x))
            return t.unsqueeze(0) if t.dim() == 1 else t

        left, right = matrix(a, "a"), matrix(b, "b")
        if left.shape[-1] != right.shape[-1]:
            raise WarmstartError(
                f"the embeddings have {left.shape[-1]} and {right.shape[-1]} dimensions",
                "compare vectors of one model",
            )
        return torch.nn.functional.normalize(left, dim=-1) @ torch.nn.functional.normalize(right, dim=-1).T

    @speaks_python("Model.fill_mask")
    def fill_mask(self, text: str, k: int = 5) -> list[list[dict]]:
        """The top ``k`` tokens (with probabilities) at each [MASK] of ``text``, in order."""
        text = checks.text("fill_mask", "text", text, empty=False)
        k = checks.whole("fill_mask", "k", k, 1, example="k=5")
        self._need(self.task == "encoder", "fill_mask", "use a run pretrained with mlm")
        return self._filler.fill(text, k)["masks"]

    @cached_property
    def _filler(self) -> FillMask:
        return FillMask(str(self.path), device=str(self.device))

    @speaks_python("Model.generate")
    def generate(
        self,
        prompt: str | Sequence[str],
        max_new_tokens: int | None = None,
        do_sample: bool | None = None,
        num_return_sequences: int = 1,
        top_k: int | None = None,
        top_p: float | None = None,
        temperature: float | None = None,
        repetition_penalty: float | None = None,
        num_beams: int | None = None,
        stop: str | Sequence[str] | None = None,
        **settings: Any,
    ) -> Any:
        """The text a generator writes for ``prompt`` (decoders: the prompt and its continuation; an
        encoder-decoder: its output). One prompt: a string; a list of prompts: a list; with
        ``num_return_sequences`` n > 1 a list of n texts per prompt (as ``pipeline("text-generation")``).

        As transformers' ``generate``: ``max_new_tokens`` (50), ``do_sample`` (sampling instead of greedy),
        ``num_beams`` (beam search when above 1), ``top_k`` (0: off; transformers' default is 50), ``top_p``
        (1.0: off), ``temperature`` (1.0), ``repetition_penalty`` (1.0: off), ``num_return_sequences``;
        ``stop``: a string or strings that end a text (left out). Other settings as ``warmstart generate``
        takes them (``seed``, ``max_length``, ``length_penalty``, ``strategy``: generation/decode.py)."""
        prompts, single = checks.texts("generate", "prompt", prompt, empty=False)
        counts = {"max_new_tokens": (max_new_tokens, 1), "top_k": (top_k, 0), "num_beams": (num_beams, 1),
                  "num_return_sequences": (num_return_sequences, 1)}  # fmt: skip
        for name, (value, least) in counts.items():
            checks.whole("generate", name, value, least, none=name != "num_return_sequences")
        scales = {"top_p": top_p, "temperature": temperature, "repetition_penalty": repetition_penalty}
        for name, scale in scales.items():
            checks.number("generate", name, scale, above=0, most=1 if name == "top_p" else None)
        checks.flag("generate", "do_sample", do_sample, none=True)
        stop = None if stop is None else checks.names("generate", "stop", stop)
        self._need(self.task in ("generator", "text_to_text"), "generate", "use a gpt2, t5 or bart run")
        given = dict(max_new_tokens=max_new_tokens, top_k=top_k, top_p=top_p, temperature=temperature,
                     repetition_penalty=repetition_penalty, num_beams=num_beams)  # fmt: skip
        values = {**{k: v for k, v in given.items() if v is not None}, **settings}
        values["strategy"] = _strategy(settings.get("strategy"), do_sample, num_beams)
        values["num_return_sequences"] = num_return_sequences
        if stop is not None:
            values["stop"] = stop
        cfg = from_dict(GenerationConfig, values)
        texts = run_generate(self.path, prompts, cfg, stream=io.StringIO(), loaded=self._generator)
        n = cfg.num_return_sequences
        grouped: list[Any] = texts if n == 1 else [texts[i : i + n] for i in range(0, len(texts), n)]
        return grouped[0] if single else grouped

    @speaks_python("Model.save")
    def save(self, directory: PathLike) -> Path:
        """A copy of the model directory (weights, config.json, tokenizer) that ``warmstart.load`` reads."""
        out = Path(checks.path("save", "directory", directory))
        if out.exists() and not out.is_dir():
            raise WarmstartError(f"{out} is a file, not a directory", "choose a new directory")
        if out.exists() and any(out.iterdir()):
            raise WarmstartError(f"{out} already exists and is not empty", "choose another directory")
        if out.resolve() == self.path.resolve() or self.path.resolve() in out.resolve().parents:
            raise WarmstartError(
                f"{out} lies inside the model directory {self.path}", "choose one outside it"
            )
        shutil.copytree(self.path, out, dirs_exist_ok=True)
        return out

    @speaks_python("Model.export_hf")
    def export_hf(self, directory: PathLike, overwrite: bool = False) -> Path:
        """The model as a transformers directory (``AutoModel*.from_pretrained``): ``warmstart export``."""
        out = Path(checks.path("export_hf", "directory", directory))
        return export_hf(self.path, out, overwrite=bool(checks.flag("export_hf", "overwrite", overwrite)))

    def _need(self, ok: bool, what: str, fix: str) -> None:
        if not ok:
            raise WarmstartError(f"{self.path} holds a {self.task} model, which cannot {what}", fix)


def _strategy(strategy: str | None, do_sample: bool | None, num_beams: int | None) -> str:
    """warmstart's decoding strategy from transformers' switches: do_sample samples, num_beams > 1 searches,
    neither is greedy; an explicit ``strategy`` must agree with them."""
    beams = num_beams is not None and num_beams > 1
    if do_sample and beams:
        raise WarmstartError(
            "do_sample=True with num_beams above 1 (beam sampling) is not supported",
            "sample (do_sample=True) or search (num_beams=4), not both",
        )
    implied = "sample" if do_sample else "beam" if beams else None
    if strategy is not None and implied is not None and strategy != implied:
        raise WarmstartError(
            f"strategy={strategy!r} disagrees with do_sample={do_sample}, num_beams={num_beams}",
            "give the strategy or transformers' switches, not both",
        )
    return strategy or implied or "greedy"
