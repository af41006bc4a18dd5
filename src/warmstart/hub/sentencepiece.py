"""A SentencePiece unigram model file (XLNet's ``spiece.model``) as a ``tokenizers`` pipeline, read without
the sentencepiece library: the file is a protobuf ModelProto (parsed with the schema transformers ships),
whose pieces, in id order, carry the unigram scores.

The pipeline is the one transformers' XLNet converter builds from the same file: `` and '' become ", then
NFKD with accents stripped (unless ``keep_accents``), lowercasing if ``do_lower_case``, the file's own
precompiled normalisation map, runs of spaces collapsed; the Metaspace pre-tokenizer ("▁" prepended when the
model adds a dummy prefix); XLNet's template ``A <sep> <cls>`` / ``A <sep> B <sep> <cls>`` (segment ids
0, 1 and 2 for <cls>) when the vocabulary has <sep> and <cls>, else T5's ``A </s>`` when it has </s>.
Only unigram models are read (SentencePiece BPE files are refused in one line).
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import Tokenizer as _Backend

from warmstart.errors import WarmstartError

UNIGRAM = 1  # TrainerSpec.ModelType
SPECIAL_TYPES = (2, 3, 4)  # ModelProto.SentencePiece.Type: UNKNOWN, CONTROL, USER_DEFINED
SPM_ROLES = {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>", "sep_token": "<sep>",
             "cls_token": "<cls>", "pad_token": "<pad>", "mask_token": "<mask>"}  # fmt: skip


def _proto(path: Path):
    from transformers.convert_slow_tokenizer import import_protobuf

    proto = import_protobuf().ModelProto()
    try:
        proto.ParseFromString(path.read_bytes())
    except Exception as exc:  # protobuf's DecodeError and friends
        raise WarmstartError(
            f"{path} is not a SentencePiece model ({exc})", "pass the spiece.model saved with it"
        ) from exc
    if not proto.pieces:
        raise WarmstartError(f"{path} holds no pieces", "pass the spiece.model saved with the model")
    return proto


def sentencepiece_backend(path: Path, config: dict) -> _Backend:
    """The ``tokenizers`` pipeline of the SentencePiece unigram model ``path`` (see the module docstring);
    ``config``: tokenizer_config.json (do_lower_case, keep_accents)."""
    proto = _proto(path)
    if proto.trainer_spec.model_type != UNIGRAM:
        raise WarmstartError(
            f"{path} is a SentencePiece BPE model; warmstart reads unigram ones (XLNet, T5, ALBERT)",
            "save the tokenizer with transformers (tokenizer.save_pretrained writes tokenizer.json)",
        )
    vocab = [(p.piece, p.score) for p in proto.pieces]
    backend = _Backend(models.Unigram(vocab, unk_id=proto.trainer_spec.unk_id))
    norms = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
    if not config.get("keep_accents", False):
        norms += [normalizers.NFKD(), normalizers.StripAccents()]
    if config.get("do_lower_case", False):
        norms.append(normalizers.Lowercase())
    if proto.normalizer_spec.precompiled_charsmap:
        norms.append(normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap))
    norms.append(normalizers.Replace(Regex(" {2,}"), " "))
    backend.normalizer = normalizers.Sequence(norms)
    scheme = "always" if proto.normalizer_spec.add_dummy_prefix else "never"
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme)
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme=scheme)
    ids = {p.piece: i for i, p in enumerate(proto.pieces)}
    if "<sep>" in ids and "<cls>" in ids:
        backend.post_processor = processors.TemplateProcessing(
            single="$A:0 <sep>:0 <cls>:2",
            pair="$A:0 <sep>:0 $B:1 <sep>:1 <cls>:2",
            special_tokens=[("<sep>", ids["<sep>"]), ("<cls>", ids["<cls>"])],
        )
    elif "</s>" in ids:
        backend.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B:1 </s>:1", special_tokens=[("</s>", ids["</s>"])]
        )
    special = [p.piece for p in proto.pieces if p.type in SPECIAL_TYPES]
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    return backend
