"""Masked-LM training throughput: warmstart vs transformers' BertForMaskedLM, side by side in one process.

Same shape (default: 4 layers, hidden 256, 4 heads, vocab 8192, seq 128, batch 32), same real token ids (the
packaged wiki-leads text through a WordPiece tokenizer), same 15% masking, AdamW; trials alternate between
the two so that machine noise hits both. Prints a Markdown table and one JSON line.

    python benchmarks/mlm_throughput.py --trials 3 --steps 10

On a GPU (``--device cuda``): a model preset (``--preset bert-base``: 12 layers, hidden 768, 12 heads, FFN
3072, model vocabulary 30,522), several batch sizes, CUDA-synchronised timing, the device's measured bf16
matmul peak, the model FLOPs per token each side really does, and the fraction of the peak achieved (MFU):

    python benchmarks/mlm_throughput.py --device cuda --preset bert-base --precision bf16 --batch 32 256

FLOPs per token (training = 3 x forward): 6 x the matmul parameters each token goes through, plus attention
(QK^T and AV: 4 x seq x hidden per layer forward, x3 for training; flash attention's backward recompute is
not counted). transformers projects every position onto the vocabulary; warmstart only the masked ones
(rounded up to a multiple of 64 rows), so the MLM head (dense + decoder) counts for each side at the
fraction of rows it really computes. Embedding lookups, norms and the optimizer are not counted.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

import torch

from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.models.bert import BertConfig, BertModel
from warmstart.objectives.mlm import IGNORE, MaskedLM, MLMCollator, MLMConfig
from warmstart.tokenization.train import train_tokenizer
from warmstart.train.optim import adamw

SMALL = {"layers": 4, "hidden": 256, "heads": 4, "intermediate": None}


def real_batches(vocab: int, seq: int, batch: int, count: int, tok=None) -> tuple[list[dict], object]:
    texts = list(corpus_texts(["wiki-leads"], DataOptions(label_column=None), "train"))
    if tok is None:
        tok = train_tokenizer(
            texts[:4000], "wordpiece", vocab, Path(tempfile.mkdtemp()) / "tok", show_progress=False
        )
    width = seq - 2
    need, end = count * batch * width, 6000
    stream = [t for ids in tok.encode_batch(texts[4000:end]) for t in ids + [tok.sep_id]]
    while len(stream) < need and end < len(texts):  # large batches: more of the same text, in order
        more = tok.encode_batch(texts[end : end + 2000])
        stream += [t for ids in more for t in ids + [tok.sep_id]]
        end += 2000
    rows = [[tok.cls_id, *stream[i * width : (i + 1) * width], tok.sep_id] for i in range(count * batch)]
    ids = torch.tensor(rows)
    collate = MLMCollator(MLMConfig(), tok.mask_id, tok.vocab_size, tok.special_ids)
    gen = torch.Generator().manual_seed(0)
    return [collate(ids[i * batch : (i + 1) * batch], gen) for i in range(count)], tok


def warmstart_step(cfg: BertConfig, device: torch.device, compile_: bool = False):
    """warmstart's training step as its fit loop runs it: its AdamW (fused where it can be) and, with
    ``compile_``, ``train.compile``'s in-place torch.compile of the unit."""
    unit = MaskedLM(BertModel(cfg), MLMConfig()).to(device)
    opt = adamw(unit, lr=1e-4, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-8)
    if compile_:
        unit.compile()

    def step(batch, bf16):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss, _ = unit(batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def transformers_step(cfg: BertConfig, device: torch.device, compile_: bool = False):
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
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    if compile_:
        model.compile()

    def step(batch, bf16):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=batch["input_ids"], labels=batch["labels"]).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def timed(step, batches, steps: int, bf16: bool, sync=lambda: None, warmup: int = 1) -> float:
    for i in range(warmup):
        step(batches[i % len(batches)], bf16)
    sync()
    start = time.perf_counter()
    for i in range(steps):
        step(batches[i % len(batches)], bf16)
    sync()
    return steps * batches[0]["input_ids"].numel() / (time.perf_counter() - start)


def matmul_peak(device: torch.device, n: int = 8192, reps: int = 20) -> float:
    """bf16 matmul FLOP/s of this device: median of ``reps`` timed n x n x n products on random data."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize(device)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    del a, b
    return 2 * n**3 / statistics.median(times)


GPU_KINDS = [  # (kind, pattern on a CUDA kernel's name); the first match wins
    ("matmul", r"gemm|sm90_xmma|cutlass|nvjet|cublas"),
    ("attention", r"flash|fmha|attention|efficient"),
    ("optimizer", r"adam|multi_tensor"),
    ("fused element-wise (triton)", r"^triton"),
    ("softmax / loss", r"softmax|log_softmax|nll|cross_entropy"),
    ("norm", r"norm"),
    ("copy / cast", r"copy|cast|index|gather|scatter|cat"),
    ("element-wise", r"elementwise|vectorized|reduce|fill"),
]


def kernel_shares(step, batches, bf16: bool, sync, steps: int = 3) -> dict:
    """Share of CUDA kernel time per kind (GPU_KINDS) over ``steps`` profiled steps, plus the share of the
    step's wall time the GPU sat idle (launch gaps, host work)."""
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    sync()
    with torch.profiler.profile(activities=acts) as prof:
        start = time.perf_counter()
        for i in range(steps):
            step(batches[i % len(batches)], bf16)
        sync()
        wall = time.perf_counter() - start
    kinds: dict[str, float] = {}
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", 0) or getattr(e, "self_cuda_time_total", 0)
        if t and e.device_type == torch.autograd.DeviceType.CUDA:
            k = next((k for k, pat in GPU_KINDS if re.search(pat, e.key, re.I)), "other")
            kinds[k] = kinds.get(k, 0.0) + t / 1e6
    busy = sum(kinds.values())
    out = {k: round(v / wall, 4) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])}
    out["idle"] = round(max(0.0, 1 - busy / wall), 4)
    return out


def flops_per_token(cfg: BertConfig, seq: int, head_rows: float) -> float:
    """Training FLOPs per input token; ``head_rows`` = the fraction of positions the MLM head computes."""
    h, i, v, layers = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size, cfg.num_hidden_layers
    encoder = layers * (4 * h * h + 2 * h * i)  # QKV + output projection + FFN up and down
    head = h * h + h * v  # MLM transform dense + decoder (tied to the embeddings)
    attention = 12 * layers * seq * h  # QK^T and AV, forward and backward
    return 6 * encoder + attention + 6 * head * head_rows


def warmstart_head_rows(batches: list[dict]) -> float:
    """Fraction of positions warmstart's sparse head computes: masked rows rounded up to a multiple of 64."""
    fractions = []
    for b in batches:
        n = int((b["labels"] != IGNORE).sum())
        fractions.append((n + (-n % 64)) / b["labels"].numel())
    return statistics.fmean(fractions)


def shape_args(a) -> dict:
    shape = dict(SMALL)
    if a.preset:
        from warmstart.config import load_preset

        m = load_preset(a.preset)["model"]
        shape = {
            "layers": m["num_hidden_layers"],
            "hidden": m["hidden_size"],
            "heads": m["num_attention_heads"],
            "intermediate": m["intermediate_size"],
        }
    for k in ("layers", "hidden", "heads"):
        if getattr(a, k) is not None:
            shape[k] = getattr(a, k)
    if shape["intermediate"] is None or a.hidden is not None:
        shape["intermediate"] = 4 * shape["hidden"]
    return shape


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", help="model shape from warmstart's presets (e.g. bert-base); flags below win")
    p.add_argument("--layers", type=int, default=None, help="default 4 (or the preset's)")
    p.add_argument("--hidden", type=int, default=None, help="default 256 (or the preset's)")
    p.add_argument("--heads", type=int, default=None, help="default 4 (or the preset's)")
    p.add_argument("--vocab", type=int, default=8192, help="WordPiece vocabulary the token ids come from")
    p.add_argument(
        "--model-vocab",
        type=int,
        default=None,
        help="model vocabulary (embeddings and decoder); default the tokenizer's, 30522 with --preset",
    )
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, nargs="+", default=[32], help="one or more batch sizes")
    p.add_argument("--precision", nargs="+", choices=["fp32", "bf16"], default=["fp32", "bf16"])
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--steps", type=int, default=10, help="timed steps per trial")
    p.add_argument("--warmup", type=int, default=None, help="untimed steps per trial (default 1; 3 on cuda)")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--compile", action="store_true", help="torch.compile both sides (train.compile)")
    p.add_argument("--spec-tflops", type=float, default=None, help="the device's bf16 spec (H100/H200: 989)")
    p.add_argument("--profile", action="store_true", help="cuda: warmstart's step by kernel kind (gpu_kinds)")
    a = p.parse_args()
    device = torch.device(a.device)
    cuda = device.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    warmup = a.warmup if a.warmup is not None else (3 if cuda else 1)
    torch.manual_seed(0)
    shape_ = shape_args(a)
    peak = matmul_peak(device) if cuda else None
    spec = a.spec_tflops * 1e12 if a.spec_tflops else None
    tok, rows = None, []
    for batch_size in a.batch:
        batches, tok = real_batches(a.vocab, a.seq, batch_size, 8, tok)
        model_vocab = a.model_vocab or (30522 if a.preset else tok.vocab_size)
        cfg = BertConfig(
            vocab_size=model_vocab,
            hidden_size=shape_["hidden"],
            num_hidden_layers=shape_["layers"],
            num_attention_heads=shape_["heads"],
            intermediate_size=shape_["intermediate"],
        )
        batches = [{k: v.to(device) for k, v in b.items()} for b in batches]
        flops = {
            "warmstart": flops_per_token(cfg, a.seq, warmstart_head_rows(batches)),
            "transformers": flops_per_token(cfg, a.seq, 1.0),
        }
        for name in a.precision:
            bf16 = name == "bf16"
            runners = {
                "warmstart": warmstart_step(cfg, device, a.compile),
                "transformers": transformers_step(cfg, device, a.compile),
            }
            rates: dict[str, list[float]] = {k: [] for k in runners}
            for _ in range(a.trials):
                for k, step in runners.items():
                    rates[k].append(timed(step, batches, a.steps, bf16, sync, warmup))
            ws, hf = statistics.median(rates["warmstart"]), statistics.median(rates["transformers"])
            row = {
                "precision": "bf16 autocast" if bf16 else "fp32",
                "warmstart_tok_s": round(ws),
                "transformers_tok_s": round(hf),
                "ratio": round(ws / hf, 2),
            }
            if cuda or len(a.batch) > 1:
                row = {"batch": batch_size, **row}
            if cuda:
                row["warmstart_gflop_per_tok"] = round(flops["warmstart"] / 1e9, 4)
                row["transformers_gflop_per_tok"] = round(flops["transformers"] / 1e9, 4)
                row["warmstart_mfu"] = round(ws * flops["warmstart"] / peak, 4)
                row["transformers_mfu"] = round(hf * flops["transformers"] / peak, 4)
                if spec:
                    row["warmstart_of_spec"] = round(ws * flops["warmstart"] / spec, 4)
                    row["transformers_of_spec"] = round(hf * flops["transformers"] / spec, 4)
                if a.profile:
                    row["warmstart_kernels"] = kernel_shares(runners["warmstart"], batches, bf16, sync)
            rows.append(row)
            del runners
            if cuda:
                torch.cuda.empty_cache()
    batch_text = ", ".join(map(str, a.batch))
    shape = (
        f"{shape_['layers']}L/{shape_['hidden']}H/{shape_['heads']}A vocab {cfg.vocab_size} seq {a.seq} "
        f"batch {batch_text}"
    )
    if not cuda:
        where = f"{torch.get_num_threads()} threads"
    else:
        where = f"{torch.cuda.get_device_name(device)}, bf16 matmul peak {peak / 1e12:.0f} TFLOP/s (measured)"
    compiled = ", torch.compile on both sides" if a.compile else ""
    print(f"\nMasked-LM training, {shape}, {where}{compiled}, median of {a.trials} trials\n")
    columns = [
        ("precision", "precision", str),
        ("warmstart tok/s", "warmstart_tok_s", "{:,}".format),
        ("transformers tok/s", "transformers_tok_s", "{:,}".format),
        ("ratio", "ratio", "{}x".format),
    ]
    if "batch" in rows[0]:
        columns.insert(0, ("batch", "batch", str))
    if cuda:
        print(
            f"token ids: WordPiece of {tok.vocab_size} trained on wiki-leads; model vocab {cfg.vocab_size}\n"
        )
        columns += [
            ("warmstart GFLOP/tok", "warmstart_gflop_per_tok", "{:.3f}".format),
            ("transformers GFLOP/tok", "transformers_gflop_per_tok", "{:.3f}".format),
            ("warmstart MFU", "warmstart_mfu", "{:.1%}".format),
            ("transformers MFU", "transformers_mfu", "{:.1%}".format),
        ]
        if spec:
            columns += [
                ("warmstart of spec", "warmstart_of_spec", "{:.1%}".format),
                ("transformers of spec", "transformers_of_spec", "{:.1%}".format),
            ]
    print("| " + " | ".join(c[0] for c in columns) + " |\n" + "|---" * len(columns) + "|")
    for r in rows:
        print("| " + " | ".join(fmt(r[key]) for _, key, fmt in columns) + " |")
    for r in rows:
        if "warmstart_kernels" in r:
            shares = ", ".join(f"{k} {v:.1%}" for k, v in r["warmstart_kernels"].items())
            print(f"warmstart step, CUDA kernel time (batch {r.get('batch')}, {r['precision']}): {shares}")
    out = {"benchmark": "mlm_throughput", "shape": shape, "compile": a.compile, "rows": rows}
    if cuda:
        out.update(
            device=torch.cuda.get_device_name(device),
            peak_bf16_tflops=round(peak / 1e12, 1),
            tokenizer_vocab=tok.vocab_size,
            torch=torch.__version__,
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
