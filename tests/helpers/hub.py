"""For the `warmstart import` / `warmstart export` tests: transformers model directories and tiny task models,
a warmstart model directory's pretraining unit loaded strictly, right-padded batches of real text, a tiny
ELECTRA, and small finetuned runs on real text (sentence pairs, tags) with their data files."""

import dataclasses
import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from warmstart.checkpoints.load import model_config
from warmstart.pretraining.config import PretrainConfig
from warmstart.registry import OBJECTIVES
from warmstart.tokenization.tokenizer import Tokenizer

SHAPE = dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64)


def hf_dir(path: Path, model, tokenizer_dir) -> Path:
    """A transformers model directory: save_pretrained plus a real tokenizer."""
    model.save_pretrained(path)
    Tokenizer.load(tokenizer_dir).save(path)
    return path


BASE = {"bert": "Bert", "roberta": "Roberta", "albert": "Albert", "electra": "Electra"}
CLASS = {"classification": "ForSequenceClassification", "tagging": "ForTokenClassification",
         "extractive_qa": "ForQuestionAnswering", "multiple_choice": "ForMultipleChoice"}  # fmt: skip
LABELS = {"classification": ["fresh", "rotten"], "tagging": ["O", "B-X", "I-X"], "extractive_qa": None,
          "multiple_choice": None}  # fmt: skip


def tiny_task_model(family: str, task: str, tok, labels=(), **extra):
    """A transformers ``BASE[family] + CLASS[task]`` of a tiny config at ``tok``'s vocabulary (seed 0), its
    head biases drawn so that they must travel; ``labels`` default to ``LABELS[task]``."""
    import transformers

    torch.manual_seed(0)
    kw = dict(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=64, max_position_embeddings=64, pad_token_id=tok.pad_id)  # fmt: skip
    if family == "roberta":
        kw.update(max_position_embeddings=66, type_vocab_size=1)
    if family in ("albert", "electra"):
        kw.update(embedding_size=16)
    labels = LABELS[task] if labels == () else labels
    if labels:
        kw.update(id2label=dict(enumerate(labels)), label2id={x: i for i, x in enumerate(labels)})
    config = getattr(transformers, f"{BASE[family]}Config")(**kw, **extra)
    model = getattr(transformers, BASE[family] + CLASS[task])(config).eval()
    with torch.no_grad():  # heads whose biases are not zero, so that they must travel
        for name, p in model.named_parameters():
            if name.startswith(("classifier", "qa_outputs", "sequence_summary")) and name.endswith("bias"):
                p.normal_()
    return model


def load_unit(d: Path):
    """The pretraining unit of a warmstart model directory, loaded strictly (every name the unit's)."""
    config = json.loads((d / "config.json").read_text())
    cfg, model_cls = model_config(config)
    unit_cls = OBJECTIVES[config["warmstart"]["objective"]]
    defaults = [PretrainConfig.__dataclass_fields__[s].default_factory() for s in unit_cls.sections]
    recorded = config["warmstart"]  # the sections that shape the unit (ELECTRA's generator)
    sections = [dataclasses.replace(d, **recorded.get(s, {})) for d, s in zip(defaults, unit_cls.sections)]
    unit = unit_cls(model_cls(cfg), *sections)
    unit.load_state_dict(load_file(str(d / "model.safetensors")), strict=True)
    return unit.eval()


def batch(tok, texts, width=40, pairs=False):
    """Right-padded ids of real text (row 2 shorter), their mask and segment ids."""
    ids, types = tok.encode_pairs(texts, [t[::-1] for t in texts] if pairs else None, max_length=width)
    ids[2], types[2] = ids[2][:17], types[2][:17]
    n = max(map(len, ids))
    x = torch.tensor([i + [tok.pad_id] * (n - len(i)) for i in ids])
    t = torch.tensor([s + [0] * (n - len(s)) for s in types])
    return x, (x != tok.pad_id).long(), t


def same(a, b, mask) -> float:
    """The largest difference of ``a`` and ``b`` at the real (mask 1) tokens."""
    return float((a - b)[mask.bool()].abs().max())


def tiny_electra(tok):
    """A transformers ElectraForPreTraining of ``SHAPE`` (embedding 16) at the tokenizer's vocabulary."""
    import transformers

    torch.manual_seed(0)
    config = transformers.ElectraConfig(
        vocab_size=tok.vocab_size, embedding_size=16, max_position_embeddings=64, pad_token_id=tok.pad_id,
        **SHAPE,
    )  # fmt: skip
    model = transformers.ElectraForPreTraining(config).eval()
    with torch.no_grad():
        model.discriminator_predictions.dense_prediction.bias.fill_(0.5)
    return model


def tiny_t5(tok, ff: str, tied: bool):
    """A transformers T5ForConditionalGeneration (3 decoder layers, 2 encoder) at ``tok``'s vocabulary
    whose greedy output varies: v1.0 (``tied``) or v1.1 (its own head, sharper attention)."""
    import transformers

    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=tok.vocab_size, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=3,
        num_heads=4,
        feed_forward_proj=ff, tie_word_embeddings=tied, relative_attention_num_buckets=8,
        relative_attention_max_distance=20, pad_token_id=tok.pad_id, eos_token_id=tok.eos_id,
        decoder_start_token_id=tok.pad_id, initializer_factor=2.0 if tied else 1.0,
    )  # fmt: skip
    model = transformers.T5ForConditionalGeneration(config)
    if not tied:  # transformers 5 ties T5's head even when asked not to: give v1.1 its own head
        model.lm_head.weight = torch.nn.Parameter(torch.randn(tok.vocab_size, 32) * 32**-0.5)
        with torch.no_grad():  # sharper attention, so that greedy output varies (v1.0: the larger factor)
            for name, p in model.named_parameters():
                if name.endswith(("q.weight", "k.weight", "relative_attention_bias.weight")):
                    p.mul_(2)
    return model.eval()


def tiny_bart(tok):
    """A transformers BartForConditionalGeneration at ``tok``'s vocabulary whose greedy output varies."""
    import transformers

    torch.manual_seed(0)
    config = transformers.BartConfig(
        vocab_size=tok.vocab_size, d_model=32, encoder_layers=2, decoder_layers=3, encoder_attention_heads=4,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=48, max_position_embeddings=64,
        init_std=0.1, pad_token_id=tok.pad_id, bos_token_id=tok.bos_id, eos_token_id=tok.eos_id,
        decoder_start_token_id=tok.eos_id, forced_eos_token_id=None,
    )  # fmt: skip
    model = transformers.BartForConditionalGeneration(config).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_(0, 0.1)  # not zero, so that it must travel
        model.model.decoder.embed_positions.weight.mul_(3)  # position-dependent, varied greedy output
    return model


# ------------------------------------------------------------------------------------------ finetuned runs
FINETUNE_FAST = ["train.batch_size=16", "task.max_length=48", "evals_per_epoch=2", "train.lr=3e-3",
                 "data.train_limit=64", "train.progress=false"]  # fmt: skip


def finetune_run(init, dataset, out: Path, *overrides: str) -> Path:
    """A one-epoch finetune of ``init`` on ``dataset`` (``FINETUNE_FAST`` then ``overrides``): its run dir."""
    from warmstart.commands.finetune import finetune

    flags = {"init": str(init), "data": {"dataset": str(dataset)}, "epochs": 1, "out": str(out)}
    finetune(None, flags, [*FINETUNE_FAST, *overrides])
    return out


def write_csv(path: Path, rows: list[dict]) -> Path:
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def sentence_pairs(wiki_extracts, n: int = 120) -> list[dict]:
    """Real sentence pairs: an extract's first sentence with its second ("next") or another's ("other")."""
    parts = [t.split(". ") for t in wiki_extracts[300:900] if t.count(". ") >= 2][: n + 1]
    return [{"text": parts[i][0], "text_pair": parts[i if i % 2 else i + 1][1], "label": "next" if i % 2 else
             "other"} for i in range(n)]  # fmt: skip


def conll(path: Path, wiki_extracts, n: int = 80) -> Path:
    """Real words, tagged B-CAP where a word is capitalised (not first in its sentence), else O."""
    sentences = [t.split(". ")[0].split()[:20] for t in wiki_extracts[1000 : 1000 + n]]
    tag = lambda i, w: "B-CAP" if i and w[:1].isupper() else "O"  # noqa: E731
    blocks = ["\n".join(f"{w} {tag(i, w)}" for i, w in enumerate(ws)) for ws in sentences if ws]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path
