"""``warmstart.load(path)``: a run, a checkpoint or a transformers directory as one object, with what its
model can do. ``kind`` says which: a finetuned task (classification, tagging, extractive_qa,
multiple_choice, text_to_text), ``encoder`` (a pretrained encoder: encode, and fill_mask when it kept its
MLM head) or ``generator`` (gpt2, t5, bart: generate). Each part loads when first used."""

from __future__ import annotations

import io
import shutil
from functools import cached_property
from pathlib import Path

import numpy as np

from warmstart.checkpoints.card import RunCard
from warmstart.checkpoints.features import embed
from warmstart.checkpoints.fill_mask import FillMask
from warmstart.checkpoints.generate import run_generate
from warmstart.checkpoints.load import load_encoder, load_generator, read_config, resolve_checkpoint
from warmstart.checkpoints.predict import Predictor
from warmstart.checkpoints.sentence import sentence_options, unit_length
from warmstart.config import from_dict
from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig
from warmstart.hub.convert import export_hf
from warmstart.hub.on_the_fly import warmstart_dir
from warmstart.registry import generates
from warmstart.tokenization.tokenizer import Tokenizer


def load(path: str | Path) -> Model:
    """The model of a run (a finetune's best checkpoint, a pretraining's final one), of a checkpoint
    directory, or of a transformers directory (imported once into the cache, said in one line)."""
    d = resolve_checkpoint(warmstart_dir(str(path)), prefer="best")
    return Model(d, read_config(d))


class Model:
    """A loaded model: ``predict``, ``encode``, ``fill_mask``, ``generate`` (each where the model can),
    ``tokenizer``, ``config`` (its config.json), ``model`` (the torch module), ``save``, ``export_hf``."""

    def __init__(self, directory: Path, config: dict):
        self.path, self.config = Path(directory), config
        self.card = RunCard.read(config)
        if self.card.finetuned:
            self.kind = self.card.task_name
        else:
            self.kind = "generator" if generates(self.card.arch) else "encoder"

    def __repr__(self) -> str:
        return f"Model({self.kind}, {self.card.arch}, {str(self.path)!r})"

    @cached_property
    def tokenizer(self) -> Tokenizer:
        return Tokenizer.load(self.path)

    @property
    def model(self):
        """The torch module: a finetune's task unit (encoder + head), a generator, or the encoder."""
        if self.card.finetuned:
            return self._predictor.unit
        return self._generator[0] if self.kind == "generator" else self._encoder

    @cached_property
    def _predictor(self) -> Predictor:
        return Predictor(str(self.path))

    @cached_property
    def _encoder(self):
        encoder, _, _ = load_encoder(self.path)
        return encoder.eval()

    @cached_property
    def _generator(self):
        return load_generator(self.path)

    def predict(self, inputs, batch_size: int = 64):
        """Predictions of a finetuned model: for one input a dict, for a list of inputs a list, in order. An
        input is a text, a (text, text_pair) tuple, or a dict with the task's keys ({"question",
        "context"}, {"context", "choices"}, {"tokens"})."""
        self._need(self.card.finetuned, "predict", "finetune it first (warmstart.finetune)")
        single = isinstance(inputs, str | dict) or (isinstance(inputs, tuple) and len(inputs) == 2)
        items = [inputs] if single else list(inputs)
        pairs = [{"text": x[0], "text_pair": x[1]} if isinstance(x, tuple) else x for x in items]
        self._predictor.batch_size = batch_size
        records = [self._predictor.record(x, i + 1) for i, x in enumerate(pairs)]
        out = self._predictor.predict(records)
        return out[0] if single else out

    def encode(
        self,
        texts,
        pooling: str | None = None,
        normalize: bool | None = None,
        layer: str = "last",
        max_length: int | None = None,
    ) -> np.ndarray:
        """(len(texts), D) float32 sentence vectors. By default the pooling and normalization a
        sentence-transformers model declares (all-MiniLM-L6-v2: mean, unit length), else the [CLS] state."""
        self._need(self.kind != "generator", "encode", "encode with an encoder run (bert, roberta, ...)")
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        pooling, normalize, declared_length = sentence_options(self.card, pooling, normalize)
        limit = getattr(self._encoder.config, "max_length", None) or 512  # None: no learned positions
        length = max_length or min(declared_length or limit, limit)
        vectors = embed(self._encoder, self.tokenizer, texts, layer, pooling, length)
        if normalize:
            vectors = unit_length(vectors)
        return vectors[0] if single else vectors

    def fill_mask(self, text: str, k: int = 5) -> list[list[dict]]:
        """The top ``k`` tokens (with probabilities) at each [MASK] of ``text``, in order."""
        self._need(self.kind == "encoder", "fill_mask", "use a run pretrained with mlm")
        return self._filler.fill(text, k)["masks"]

    @cached_property
    def _filler(self) -> FillMask:
        return FillMask(str(self.path))

    def generate(self, prompt, **settings):
        """The text a generator writes for ``prompt`` (a list of prompts: a list); settings as
        ``warmstart generate`` takes them (max_new_tokens, strategy, temperature, top_p, num_beams...)."""
        self._need(self.kind in ("generator", "text_to_text"), "generate", "use a gpt2, t5 or bart run")
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        texts = run_generate(self.path, prompts, from_dict(GenerationConfig, settings), stream=io.StringIO())
        return texts[0] if isinstance(prompt, str) else texts

    def save(self, directory: str | Path) -> Path:
        """A copy of the model directory (weights, config.json, tokenizer) that ``warmstart.load`` reads."""
        out = Path(directory)
        if out.exists() and any(out.iterdir()):
            raise WarmstartError(f"{out} already exists and is not empty", "choose another directory")
        shutil.copytree(self.path, out, dirs_exist_ok=True)
        return out

    def export_hf(self, directory: str | Path, overwrite: bool = False) -> Path:
        """The model as a transformers directory (``AutoModel*.from_pretrained``): ``warmstart export``."""
        return export_hf(self.path, directory, overwrite=overwrite)

    def _need(self, ok: bool, what: str, fix: str) -> None:
        if not ok:
            raise WarmstartError(f"{self.path} holds a {self.kind} model, which cannot {what}", fix)
