"""Finetuning, inference and generation rows of benchmarks/throughput.py.

- finetune: sequence classification on rotten-tomatoes (the real snippets, max 128 tokens, batch 32):
  warmstart's classification unit on its length-grouped batches, AdamW and clipping as its fit loop does,
  against transformers' ``Trainer`` (its defaults: shuffled batches padded by DataCollatorWithPadding) on
  the same tokenized examples and model shape. Counted: examples per second.
- inference: the same texts through `warmstart predict`'s code path (``inference.predict_lines`` on an
  imported checkpoint) against ``transformers.pipeline("text-classification")`` on the same weights.
- generation: greedy decoding with the key/value cache, no early stop, warmstart's ``generate`` against
  ``GPT2LMHeadModel.generate`` on the same weights (4 layers, width 256); counted: new tokens per second.
"""

from __future__ import annotations

import tempfile
import time
from functools import cache
from pathlib import Path

import throughput_rows as pre
import torch
from throughput_rows import Row

SMALL_BERT = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024}
MAX_LENGTH = 128


@cache
def snippets() -> tuple[list[str], list[int]]:
    from warmstart.data.catalog import open_dataset
    from warmstart.data.dataset import DataOptions

    records = list(open_dataset("rotten-tomatoes", DataOptions()).records("train"))[:2048]
    names = sorted({r["label"] for r in records})
    return [r["text"] for r in records], [names.index(r["label"]) for r in records]


@cache
def classifier_dir() -> tuple[Path, Path]:
    """A random BertForSequenceClassification (small shape) + tokenizer as a transformers directory, and
    its `warmstart import` (the same weights as a warmstart finetuned model)."""
    import transformers

    from warmstart.hub.convert import import_hf

    tok = pre.tokenizer("wordpiece")
    root = Path(tempfile.mkdtemp())
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=tok.vocab_size, num_labels=2, **SMALL_BERT)
    transformers.BertForSequenceClassification(cfg).save_pretrained(root / "hf")
    tok.save(root / "hf")
    return root / "hf", import_hf(root / "hf", root / "ours")


def _encoded(tok) -> list[dict]:
    texts, labels = snippets()
    rows = [[tok.cls_id, *ids[: MAX_LENGTH - 2], tok.sep_id] for ids in tok.encode_batch(texts)]
    return [{"input_ids": ids, "labels": y} for ids, y in zip(rows, labels, strict=True)]


def finetune(batch: int, device) -> Row:

    from warmstart.checkpoints.load import load_finetuned
    from warmstart.tasks.base import TrainBatches

    hf_dir, ours_dir = classifier_dir()
    unit_, task, tok, labels = load_finetuned(ours_dir)
    texts, ys = snippets()
    records = [{"text": t, "label": labels[y]} for t, y in zip(texts, ys, strict=True)]
    features = task.encode(records, tok, labels, "the benchmark")
    order = TrainBatches(features, batch, seed=0)
    batches = [pre.on(device, order.batch(i)) for i in range(8)]

    def ours():
        unit, *_ = load_finetuned(ours_dir)
        unit.to(device).train()
        opt = torch.optim.AdamW(unit.parameters(), lr=2e-5, foreach=True)

        def step(b, bf16):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = unit(b)[0]
            loss.backward()
            torch.nn.utils.clip_grad_norm_(unit.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)

        return step

    def theirs():
        return TrainerSide(hf_dir, _encoded(tok), batch, device)

    return Row(
        name="classification finetuning (vs Trainer)",
        shape=f"4L/256H, rotten-tomatoes, max {MAX_LENGTH} tokens, batch {batch}",
        tokens_per_step=batch,
        flops_per_step={},
        sides={"warmstart": ours, "transformers": theirs},
        batches=batches,
        counts="examples",
    )


class TrainerSide:
    """transformers' Trainer, timed by a callback from the end of the warm-up steps to the last step."""

    def __init__(self, hf_dir: Path, examples: list[dict], batch: int, device):
        self.hf_dir, self.examples, self.batch, self.device = hf_dir, examples, batch, device

    def timed(self, steps: int, warmup: int, bf16: bool) -> float:
        import transformers

        marks = []

        class Clock(transformers.TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                marks.append(time.perf_counter())

        model = transformers.AutoModelForSequenceClassification.from_pretrained(self.hf_dir)
        tok = transformers.PreTrainedTokenizerFast.from_pretrained(self.hf_dir)
        args = transformers.TrainingArguments(
            output_dir=tempfile.mkdtemp(), per_device_train_batch_size=self.batch, max_steps=warmup + steps,
            learning_rate=2e-5, bf16=bf16, use_cpu=self.device.type == "cpu", report_to=[],
            save_strategy="no", logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0,
        )  # fmt: skip
        trainer = transformers.Trainer(
            model=model, args=args, train_dataset=self.examples,
            data_collator=transformers.DataCollatorWithPadding(tok), callbacks=[Clock()],
        )  # fmt: skip
        trainer.train()
        return steps * self.batch / (marks[-1] - marks[warmup - 1]) if warmup else float("nan")


def inference(batch: int, device) -> Row:
    import transformers

    from warmstart.inference.predict import predict_lines

    hf_dir, ours_dir = classifier_dir()
    texts, _ = snippets()

    class Ours:
        def timed(self, steps, warmup, bf16):
            list(predict_lines(str(ours_dir), texts[:batch]))  # warm-up: loads the model once
            start = time.perf_counter()
            list(predict_lines(str(ours_dir), texts))
            return len(texts) / (time.perf_counter() - start)

    class Theirs:
        def timed(self, steps, warmup, bf16):
            pipe = transformers.pipeline(
                "text-classification", model=str(hf_dir), tokenizer=str(hf_dir), batch_size=batch,
                truncation=True, max_length=MAX_LENGTH, device=device,
            )  # fmt: skip
            pipe(texts[:batch])
            start = time.perf_counter()
            pipe(texts)
            return len(texts) / (time.perf_counter() - start)

    return Row(
        name="classification inference (vs pipeline)",
        shape=f"4L/256H, {len(texts):,} rotten-tomatoes snippets, batch {batch}, model loaded once",
        tokens_per_step=0,
        flops_per_step={},
        sides={"warmstart": Ours, "transformers": Theirs},
        counts="examples",
    )


def generation(batch: int, new_tokens: int, device) -> Row:
    import transformers

    from warmstart.checkpoints.load import load_generator
    from warmstart.generation.decode import GenerationConfig, generate
    from warmstart.hub.convert import import_hf

    tok = pre.tokenizer("bpe")
    root = Path(tempfile.mkdtemp())
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        vocab_size=tok.vocab_size,
        bos_token_id=tok.eos_id,
        eos_token_id=tok.eos_id,
        n_embd=256,
        n_layer=4,
        n_head=4,
        n_positions=512,
    )
    hf = transformers.GPT2LMHeadModel(cfg).eval().to(device)
    hf.save_pretrained(root / "hf")
    tok.save(root / "hf")
    ours, _, _ = load_generator(import_hf(root / "hf", root / "ours"))
    ours.to(device)
    prompts = [ids[:32] for ids in tok.encode_batch(snippets()[0][:batch])]
    gen_cfg = GenerationConfig(max_new_tokens=new_tokens, stop_on_eos=False)
    ids = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(p[::-1]) for p in prompts], batch_first=True, padding_value=tok.pad_id or 0
    ).flip(1)  # left-padded, as decoder-only generation needs
    mask = (
        torch.arange(ids.shape[1]).flip(0)[None] < torch.tensor([len(p) for p in prompts])[:, None]
    ).long()

    class Side:
        def __init__(self, run):
            self.run = run

        def timed(self, steps, warmup, bf16):
            with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                self.run()
                start = time.perf_counter()
                for _ in range(steps):
                    self.run()
            return steps * batch * new_tokens / (time.perf_counter() - start)

    def ours_run():
        generate(ours, prompts, gen_cfg, eos_id=None, pad_id=tok.pad_id or 0)

    def theirs_run():
        hf.generate(
            input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=new_tokens,
            min_new_tokens=new_tokens, do_sample=False, use_cache=True, pad_token_id=tok.pad_id or 0,
        )  # fmt: skip

    return Row(
        name="greedy generation, KV cache (vs generate)",
        shape=f"GPT-2 4L/256H, {batch} prompts of <= 32 tokens, {new_tokens} new tokens",
        tokens_per_step=0,
        flops_per_step={},
        sides={"warmstart": lambda: Side(ours_run), "transformers": lambda: Side(theirs_run)},
        counts="new tokens",
    )
