"""Masked-LM training throughput: warmstart vs transformers' BertForMaskedLM, side by side in one process.

Same shape (default: 4 layers, hidden 256, 4 heads, vocab 8192, seq 128, batch 32), same real token ids (the
packaged wiki-leads text through a WordPiece tokenizer), same 15% masking, AdamW; trials alternate between
the two so that machine noise hits both. Prints a Markdown table and one JSON line.

    python benchmarks/mlm_throughput.py --trials 3 --steps 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from warmstart.data.catalog import DataOptions
from warmstart.data.corpus import corpus_texts
from warmstart.models.bert import BertConfig, BertModel
from warmstart.objectives.mlm import MaskedLM, MLMCollator, MLMConfig
from warmstart.tokenization import train_tokenizer


def real_batches(vocab: int, seq: int, batch: int, count: int) -> tuple[list[dict], object]:
    texts = list(corpus_texts(["wiki-leads"], DataOptions(label_column=None), "train"))
    tok = train_tokenizer(
        texts[:4000], "wordpiece", vocab, Path(tempfile.mkdtemp()) / "tok", show_progress=False
    )
    stream = [t for ids in tok.encode_batch(texts[4000:6000]) for t in ids + [tok.sep_id]]
    width = seq - 2
    rows = [[tok.cls_id, *stream[i * width : (i + 1) * width], tok.sep_id] for i in range(count * batch)]
    ids = torch.tensor(rows)
    collate = MLMCollator(MLMConfig(), tok.mask_id, tok.vocab_size, tok.special_ids)
    gen = torch.Generator().manual_seed(0)
    return [collate(ids[i * batch : (i + 1) * batch], gen) for i in range(count)], tok


def warmstart_step(cfg: BertConfig):
    unit = MaskedLM(BertModel(cfg), MLMConfig())
    opt = torch.optim.AdamW(unit.parameters(), lr=1e-4, foreach=True)

    def step(batch, bf16):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, _ = unit(batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def transformers_step(cfg: BertConfig):
    import transformers

    model = transformers.BertForMaskedLM(
        transformers.BertConfig(
            vocab_size=cfg.vocab_size,
            hidden_size=cfg.hidden_size,
            num_hidden_layers=cfg.num_hidden_layers,
            num_attention_heads=cfg.num_attention_heads,
            intermediate_size=cfg.intermediate_size,
            attn_implementation="sdpa",
        )
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)

    def step(batch, bf16):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=batch["input_ids"], labels=batch["labels"]).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def timed(step, batches, steps: int, bf16: bool) -> float:
    step(batches[0], bf16)  # warm-up
    start = time.perf_counter()
    for i in range(steps):
        step(batches[i % len(batches)], bf16)
    return steps * batches[0]["input_ids"].numel() / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=10, help="timed steps per trial")
    p.add_argument("--trials", type=int, default=3)
    a = p.parse_args()
    torch.manual_seed(0)
    batches, tok = real_batches(a.vocab, a.seq, a.batch, 8)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=a.hidden,
        num_hidden_layers=a.layers,
        num_attention_heads=a.heads,
        intermediate_size=4 * a.hidden,
    )
    rows = []
    for name, bf16 in [("fp32", False), ("bf16 autocast", True)]:
        runners = {"warmstart": warmstart_step(cfg), "transformers": transformers_step(cfg)}
        rates: dict[str, list[float]] = {k: [] for k in runners}
        for _ in range(a.trials):
            for k, step in runners.items():
                rates[k].append(timed(step, batches, a.steps, bf16))
        ws, hf = statistics.median(rates["warmstart"]), statistics.median(rates["transformers"])
        rows.append(
            {
                "precision": name,
                "warmstart_tok_s": round(ws),
                "transformers_tok_s": round(hf),
                "ratio": round(ws / hf, 2),
            }
        )
    shape = f"{a.layers}L/{a.hidden}H/{a.heads}A vocab {tok.vocab_size} seq {a.seq} batch {a.batch}"
    print(f"\nMasked-LM training, {shape}, {torch.get_num_threads()} threads, median of {a.trials} trials\n")
    print("| precision | warmstart tok/s | transformers tok/s | ratio |\n|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['precision']} | {r['warmstart_tok_s']:,} | {r['transformers_tok_s']:,} | {r['ratio']}x |"
        )
    print(json.dumps({"benchmark": "mlm_throughput", "shape": shape, "rows": rows}))


if __name__ == "__main__":
    main()
