"""Sample outputs for a report: a few greedy, short generations from validation prompts.

A gpt2/t5/bart pretraining run continues (gpt2) or rewrites (t5, bart) the first words of validation
documents from its token shards; a text_to_text finetune run answers the first validation inputs of its
dataset (through `warmstart predict`'s code), shown beside the reference output.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from warmstart.checkpoints.load import resolve_checkpoint
from warmstart.data.options import FinetuneDataConfig, open_finetune_data
from warmstart.data.shards import TokenShards
from warmstart.generation.decode import GenerationConfig
from warmstart.inference.generate import run_generate
from warmstart.inference.predict import predict_lines
from warmstart.registry import family
from warmstart.tokenization.tokenizer import Tokenizer

PROMPTS = 3
PROMPT_TOKENS = 12
NEW_TOKENS = 24


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def pretrain_samples(run_dir: Path, cfg: dict) -> list[list[str]]:
    """[[prompt, generated]] from the first validation documents of the run's shards."""

    shards_dir = Path(cfg.get("data", {}).get("shards") or run_dir / "shards")
    shards = TokenShards.open(shards_dir, "validation")
    tokenizer = Tokenizer.load(shards_dir) if (shards_dir / "tokenizer.json").is_file() else None

    tokenizer = tokenizer or Tokenizer.load(resolve_checkpoint(run_dir))
    prompts = []
    for i in range(min(PROMPTS, shards.num_docs)):
        start = int(shards.doc_offsets[i])
        end = int(shards.doc_offsets[i + 1]) if i + 1 < shards.num_docs else shards.num_tokens
        text = tokenizer.decode(shards.read(start, min(PROMPT_TOKENS, end - start)).tolist()).strip()
        if text:
            prompts.append(text)
    if not prompts:
        return []
    gen = GenerationConfig(max_new_tokens=NEW_TOKENS, strategy="greedy")
    texts = run_generate(run_dir, prompts, gen, stream=io.StringIO())
    decoder = family(cfg.get("arch", "bert")).model.decoder_only
    return [
        [_clip(p), _clip(t[len(p) :] if decoder and t.startswith(p) else t)] for p, t in zip(prompts, texts)
    ]


def text_to_text_samples(run_dir: Path, cfg: dict) -> list[list[str]]:
    """[[input, reference, generated]] for the first validation records of the run's dataset."""

    data_cfg = FinetuneDataConfig(
        **{k: v for k, v in cfg.get("data", {}).items() if k in FinetuneDataConfig.__dataclass_fields__}
    )
    data = open_finetune_data(data_cfg, "seq2seq")  # its dataset, or the user's own split files
    records = []
    for r in data.records("validation"):
        records.append(r)
        if len(records) == PROMPTS:
            break
    lines = [json.dumps({"text": r["text"]}) for r in records]
    preds = list(predict_lines(str(run_dir), lines))
    return [
        [_clip(r["text"]), _clip(r.get("target", "")), _clip(p.get("generated", ""))]
        for r, p in zip(records, preds)
    ]
