"""The original ELMo release (bilm-tf, the files AllenNLP reads): an options JSON and an HDF5 weights file,
imported as a warmstart elmo model directory (`warmstart import elmo:OPTIONS.json:WEIGHTS.hdf5 --out DIR
--vocab VOCAB.txt`), the sort `warmstart pretrain --arch elmo` writes, so `finetune --init` takes it.

The layout is the one bilm-tf's ``dump_weights`` writes and AllenNLP's ``_ElmoCharacterEncoder`` and
``ElmoLstm.load_weights`` read (F: the filters' sum, D: the character embedding, P: ``lstm.projection_dim``,
C: ``lstm.dim``; TF computes ``x @ W``, torch ``W @ x``, hence the transposes):

=========================================================  ==================================================
release dataset (shape)                                    warmstart tensor (of ElmoModel; the unit: model.*)
=========================================================  ==================================================
char_embed (261, D)                                        chars.embed.weight (262, D): a zero row 0 prepended
                                                           (character ids are the release's, shifted by one)
CNN/W_cnn_{i} (1, width, D, n)                             chars.convs.{i}.weight (n, D, width): [0] permuted
CNN/b_cnn_{i} (n,)                                         chars.convs.{i}.bias
CNN_high_{k}/W_transform, b_transform (F, F), (F,)         chars.highway.layers.{k}: first half, W.T and b
CNN_high_{k}/W_carry, b_carry (F, F), (F,)                 chars.highway.layers.{k}: second half, -W.T, -b
CNN_proj/W_proj, b_proj (F, P), (P,)                       chars.proj.weight (W.T), chars.proj.bias; absent
                                                           when F == P (bilm-tf projects only when F > P):
                                                           the identity and a zero bias
RNN_0/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0 (2P, 4C)       forward_lm.layers.{l}.weight_ih_l0 (rows :P, .T)
                                                           and weight_hh_l0 (rows P:, .T), gates reordered
RNN_0/.../Cell{l}/LSTMCell/B (4C,)                         forward_lm.layers.{l}.bias_ih_l0, reordered, +1.0
                                                           on the forget gate; bias_hh_l0 = 0
RNN_0/.../Cell{l}/LSTMCell/W_P_0 (C, P)                    forward_lm.layers.{l}.weight_hr_l0 (P, C): .T
RNN_1/...                                                  backward_lm.layers.{l}.* (the same way)
(no softmax in the release)                                softmax.weight: starts fresh, with a warning
(the vocabulary file, one word per line)                   the tokenizer and the char_table buffer (bind)
=========================================================  ==================================================

Conventions, checked against bilm-tf's model.py and AllenNLP's elmo.py / elmo_lstm.py:

- The highway: bilm-tf computes ``t * relu(x W_transform + b_transform) + (1 - t) * x`` with ``t =
  sigmoid(x W_carry + b_carry)``; warmstart's (AllenNLP's) layer is ``g * x + (1 - g) * relu(first half)``,
  ``g = sigmoid(second half)``, so ``g = 1 - t = sigmoid(-(x W_carry + b_carry))``: the carry weights enter
  negated, as AllenNLP loads them.
- The LSTM: TF's ``LSTMCell`` multiplies ``[input; h]`` by ``W_0`` (input rows first), splits the gates as
  i, j (the candidate), f, o and adds ``forget_bias = 1.0`` to f at run time; torch's order is i, f, g, o
  with two biases summed. ``c`` is clipped at ``lstm.cell_clip`` before ``o * tanh(c)`` is projected by
  ``W_P_0`` and clipped at ``lstm.proj_clip``, as warmstart's step loop does. ``RNN_0`` reads left to
  right, ``RNN_1`` right to left; ``use_skip_connections`` adds each layer's input to its output from the
  second layer on (warmstart's ``residual``).
- Characters: bilm-tf and warmstart both write a word as [begin-of-word, its UTF-8 bytes, end-of-word,
  padding...] plus one, and <S> / </S> as the sentence marks 256 / 257 between the word marks.

What differs from running the release: bilm-tf and AllenNLP carry the LSTM states over from one batch to the
next; warmstart starts every sequence from zero states. Only vocabulary words get their own characters (a
word outside the vocabulary is [UNK], whose characters are "[UNK]"), and the word tokenizer splits on
punctuation as `warmstart tokenizer train --kind word` does, so vocabulary entries holding punctuation
(PTB's "n't") are never produced by it. The release's <S>, </S> and <UNK> lines become warmstart's <S>, </S>
and [UNK].
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import torch

from warmstart.checkpoints.card import RunCard
from warmstart.data.lines import Lines
from warmstart.errors import WarmstartError
from warmstart.hub.convert import check_out
from warmstart.models.elmo import ElmoConfig
from warmstart.nn.char_cnn import CHARS
from warmstart.outputs import mark
from warmstart.pretraining.build import build_unit, model_config_json
from warmstart.pretraining.config import config_class
from warmstart.tokenization.tokenizer import SPECIAL_TOKENS, Tokenizer
from warmstart.tokenization.train import word_tokenizer
from warmstart.train.checkpoint import atomic_dir, save_weights, write_json

PREFIX = "elmo:"
FORM = "elmo:OPTIONS.json:WEIGHTS.hdf5"
FIX_OPTIONS = "pass the options JSON released with the weights (bilm-tf / AllenNLP ELMo)"
RELEASE_MARKS = {"<S>": "<S>", "</S>": "</S>", "<UNK>": "[UNK]"}  # the release's lines and warmstart's tokens


def parse_source(src: str) -> tuple[Path, Path]:
    """(options, weights) of ``elmo:OPTIONS:WEIGHTS``; the options path ends at the first colon that
    follows an existing file (so either path may hold colons)."""
    rest = str(src).removeprefix(PREFIX)
    cuts = [i for i, ch in enumerate(rest) if ch == ":"]
    cut = next((i for i in cuts if Path(rest[:i]).is_file()), cuts[0] if len(cuts) == 1 else None)
    if cut is None or not rest[:cut] or not rest[cut + 1 :]:
        raise WarmstartError(f"{src} names no options file and weights file", f"write it as {FORM}")
    options, weights = Path(rest[:cut]), Path(rest[cut + 1 :])
    for path, what in ((options, "options JSON"), (weights, "HDF5 weights file")):
        if not path.is_file():
            raise WarmstartError(f"no ELMo {what} {path}", f"write the source as {FORM}")
    return options, weights


# ---------------------------------------------------------------------------------------------- options
def _get(options: dict, dotted: str, source: Path, default=None):
    node = options
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is not None:
                return default
            raise WarmstartError(f"{source} has no {dotted}", FIX_OPTIONS)
        node = node[part]
    return node


def _int(options: dict, dotted: str, source: Path, default: int | None = None, low: int = 1) -> int:
    value = _get(options, dotted, source, default)
    value = default if value is None and default is not None else value  # bilm-tf: n_highway null is none
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise WarmstartError(f"{source}: {dotted} is {value!r}, not a whole number >= {low}", FIX_OPTIONS)
    return value


def _clip(options: dict, dotted: str, source: Path) -> float:
    value = _get(options, dotted, source, default=0.0)
    value = 0.0 if value is None else value  # bilm-tf: null is no clipping
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise WarmstartError(f"{source}: {dotted} is {value!r}, not a number >= 0", FIX_OPTIONS)
    return float(value)


def _pair(f) -> bool:
    return isinstance(f, list) and len(f) == 2 and all(type(x) is int and x > 0 for x in f)


def _filters(options: dict, source: Path) -> list[list[int]]:
    filters = _get(options, "char_cnn.filters", source)
    if not isinstance(filters, list) or not filters or not all(_pair(f) for f in filters):
        raise WarmstartError(
            f"{source}: char_cnn.filters is {str(filters)[:80]}, not a list of [width, count] pairs",
            FIX_OPTIONS,
        )
    return [list(f) for f in filters]


def read_options(path: str | Path) -> ElmoConfig:
    """The ElmoConfig of a release's options JSON (vocab_size left to the vocabulary)."""
    path = Path(path)
    try:
        options = json.loads(path.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise WarmstartError(
            f"{path} is not valid JSON ({' '.join(str(exc).split())[:120]})", FIX_OPTIONS
        ) from None
    if not isinstance(options, dict):
        raise WarmstartError(f"{path} does not hold a JSON object", FIX_OPTIONS)
    p, cells = _int(options, "lstm.projection_dim", path), _int(options, "lstm.dim", path)
    skip = _get(options, "lstm.use_skip_connections", path)
    activation = _get(options, "char_cnn.activation", path)
    n_chars = _get(options, "char_cnn.n_characters", path)
    filters = _filters(options, path)
    max_chars = _int(options, "char_cnn.max_characters_per_token", path, low=3)
    checks = [
        (not isinstance(skip, bool), f"lstm.use_skip_connections is {skip!r}, not true or false"),
        (activation != "relu", f"char_cnn.activation is {activation!r}: warmstart's character CNN is relu's"),
        (n_chars not in (261, 262), f"char_cnn.n_characters is {n_chars!r}, not ELMo's 261 (+1 padding)"),
        (p >= cells, f"lstm.projection_dim {p} is not below lstm.dim {cells}: warmstart's LSTMs project"),
        (sum(n for _, n in filters) < p, f"char_cnn.filters sum to fewer than lstm.projection_dim {p}"),
        (max(w for w, _ in filters) > max_chars, "a char_cnn.filters width exceeds max_characters_per_token"),
    ]
    for bad, what in checks:
        if bad:
            raise WarmstartError(f"{path}: {what}", FIX_OPTIONS)
    return ElmoConfig(
        token_representation="chars",
        max_characters_per_token=max_chars,
        char_embedding_dim=_int(options, "char_cnn.embedding.dim", path),
        filters=filters,
        n_highway=_int(options, "char_cnn.n_highway", path, default=0, low=0),
        projection_dim=p,
        cell_size=cells,
        num_layers=_int(options, "lstm.n_layers", path, default=1),
        residual=skip,
        cell_clip=_clip(options, "lstm.cell_clip", path),
        proj_clip=_clip(options, "lstm.proj_clip", path),
    )


# ---------------------------------------------------------------------------------------------- weights
class _Datasets:
    """The datasets of an open HDF5 file, each checked for presence, shape and finite values."""

    def __init__(self, fin, source: Path, options: Path):
        self.fin, self.source, self.options = fin, source, options

    def __call__(self, name: str, shape: tuple) -> torch.Tensor:
        import h5py

        node = self.fin.get(name)
        if not isinstance(node, h5py.Dataset):
            raise WarmstartError(
                f"{self.source} has no dataset {name}", f"pass the weights file released with {self.options}"
            )
        if tuple(node.shape) != tuple(shape):
            raise WarmstartError(
                f"{self.source}: {name} has shape {tuple(node.shape)}, {self.options} gives {tuple(shape)}",
                "pass the options JSON and weights file of one release",
            )
        value = torch.from_numpy(node[...].astype("float32"))
        if not torch.isfinite(value).all():
            raise WarmstartError(f"{self.source}: {name} holds NaN or infinite values", "download it again")
        return value


def _gates(t: torch.Tensor) -> torch.Tensor:
    """Rows (dim 0) in TF's gate order i, j, f, o -> torch's i, f, g (= j), o."""
    i, j, f, o = t.chunk(4, 0)
    return torch.cat([i, f, j, o])


def _lstm(get: _Datasets, root: str, ours: str, p: int, c: int) -> dict:
    kernel = _gates(get(root + "W_0", (2 * p, 4 * c)).T)  # (4C, 2P): [input | hidden] columns
    i, j, f, o = get(root + "B", (4 * c,)).chunk(4)
    return {
        ours + "weight_ih_l0": kernel[:, :p],
        ours + "weight_hh_l0": kernel[:, p:],
        ours + "bias_ih_l0": torch.cat([i, f + 1.0, j, o]),  # TF's forget_bias, added at run time there
        ours + "bias_hh_l0": torch.zeros(4 * c),
        ours + "weight_hr_l0": get(root + "W_P_0", (c, p)).T,
    }


def _state(get: _Datasets, cfg: ElmoConfig) -> dict:
    d, p, c = cfg.char_embedding_dim, cfg.projection_dim, cfg.cell_size
    state = {"chars.embed.weight": torch.cat([torch.zeros(1, d), get("char_embed", (CHARS - 1, d))])}
    for i, (width, n) in enumerate(cfg.filters):
        state[f"chars.convs.{i}.weight"] = get(f"CNN/W_cnn_{i}", (1, width, d, n))[0].permute(2, 1, 0)
        state[f"chars.convs.{i}.bias"] = get(f"CNN/b_cnn_{i}", (n,))
    f = sum(n for _, n in cfg.filters)
    for k in range(cfg.n_highway):
        h, ours = f"CNN_high_{k}/", f"chars.highway.layers.{k}."
        state[ours + "weight"] = torch.cat([get(h + "W_transform", (f, f)).T, -get(h + "W_carry", (f, f)).T])
        state[ours + "bias"] = torch.cat([get(h + "b_transform", (f,)), -get(h + "b_carry", (f,))])
    if f == p:  # bilm-tf has no projection then
        state["chars.proj.weight"], state["chars.proj.bias"] = torch.eye(p), torch.zeros(p)
    else:
        state["chars.proj.weight"] = get("CNN_proj/W_proj", (f, p)).T
        state["chars.proj.bias"] = get("CNN_proj/b_proj", (p,))
    for direction, lm in enumerate(("forward_lm", "backward_lm")):
        for layer in range(cfg.num_layers):
            root = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            state.update(_lstm(get, root, f"{lm}.layers.{layer}.", p, c))
    return {k: v.contiguous() for k, v in state.items()}


def read_weights(path: str | Path, cfg: ElmoConfig, options: str | Path = "the options") -> dict:
    """ElmoModel's tensors (all but the softmax and the char table) from a release's HDF5 file."""
    try:
        import h5py
    except ImportError:
        raise WarmstartError("reading ELMo's HDF5 weights needs h5py", "pip install h5py") from None
    path = Path(path)
    try:
        fin = h5py.File(path, "r")
    except OSError as exc:
        raise WarmstartError(
            f"{path} could not be read as HDF5 ({' '.join(str(exc).split())[:120]})",
            "pass the release's weights file (.hdf5)",
        ) from None
    with fin:
        return _state(_Datasets(fin, path, Path(options)), cfg)


# ---------------------------------------------------------------------------------------------- vocabulary
def vocab_tokenizer(path: str | Path, max_chars: int, options: str | Path = "the options") -> Tokenizer:
    """A word tokenizer (`warmstart tokenizer train --kind word`'s pipeline and specials) whose words are
    the vocabulary file's lines, in order; each must fit ``max_chars`` less the two word marks."""
    path, specials = Path(path), list(SPECIAL_TOKENS["word"].values())
    if not path.is_file():
        raise WarmstartError(
            f"no vocabulary file {path}", "pass the release's vocabulary (one word per line)"
        )
    words, limit = dict.fromkeys(specials), max_chars - 2
    with Lines(path, strict=True) as lines:
        for line in lines:
            word = RELEASE_MARKS.get(line.strip(), line.strip())
            if len(word.split()) > 1:
                raise WarmstartError(
                    f"line {lines.number} of {path} holds more than one word", "one per line"
                )
            if word and len(word.encode("utf-8")) > limit:
                raise WarmstartError(
                    f"line {lines.number} of {path}: the word {word[:40]!r} has {len(word.encode('utf-8'))} "
                    f"bytes, more than the {limit} that max_characters_per_token={max_chars} of {options} "
                    "leaves (2 go to the word's marks)",
                    f"remove it from {path.name} (bilm-tf would read its first {limit} bytes only)",
                )
            if word:
                words.setdefault(word)
    if len(words) == len(specials):
        raise WarmstartError(f"{path} holds no words", "pass the release's vocabulary (one word per line)")
    return word_tokenizer(words)


# ---------------------------------------------------------------------------------------------- import
def import_elmo(src: str, out: str | Path, vocab: str | Path | None, overwrite: bool = False) -> Path:
    """Convert the release ``elmo:OPTIONS.json:WEIGHTS.hdf5`` with the vocabulary file ``vocab`` into the
    warmstart model directory ``out`` (config.json, model.safetensors with BiLM's names, the tokenizer);
    returns ``out``. The softmax starts fresh (the release has none): a warning says so."""
    if vocab is None:
        raise WarmstartError(
            "an ELMo release holds no vocabulary", "pass --vocab VOCAB.txt (the release's, one word per line)"
        )
    out, vocab = Path(out), Path(vocab)
    options, weights = parse_source(src)
    check_out(out, overwrite, options, weights, vocab)
    cfg = read_options(options)
    tokenizer = vocab_tokenizer(vocab, cfg.max_characters_per_token, options)
    cfg = dataclasses.replace(cfg, vocab_size=tokenizer.vocab_size)
    state = read_weights(weights, cfg, options)
    pc = config_class({"arch": "elmo"})(arch="elmo", objective="bilm", model=cfg)
    card = dataclasses.replace(RunCard.read(model_config_json(pc, tokenizer)), imported_from=str(src))
    config_json = card.write(model_config_json(pc, tokenizer))
    with torch.random.fork_rng(devices=[]):
        unit = build_unit(pc, tokenizer)  # binds the char table
    missing, unexpected = unit.load_state_dict({"model." + k: v for k, v in state.items()}, strict=False)
    if set(missing) != {"model.softmax.weight", "model.char_table"} or unexpected:  # a mapping bug
        raise RuntimeError(f"ELMo import: not loaded {missing[:3]}, unknown {unexpected[:3]}")
    warnings.warn(
        f"{weights} has no softmax (ELMo's releases leave it out): the softmax over the "
        f"{tokenizer.vocab_size} words of {vocab.name} starts fresh",
        stacklevel=2,
    )

    def write(tmp: Path) -> None:
        write_json(config_json, tmp / "config.json")
        save_weights(unit, tmp / "model.safetensors")
        tokenizer.save(tmp)
        mark(tmp, "import")

    return atomic_dir(out, write)
