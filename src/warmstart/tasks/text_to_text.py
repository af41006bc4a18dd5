"""Text-to-text finetuning: an input text (behind an optional task prefix) -> an output text.

Encoder-decoders (T5, BART) read the input and are trained to write the output by teacher forcing; a
decoder (GPT-2) reads ``</s> prefix+input separator`` and is trained on the completion only (the prompt's
positions carry no loss). Evaluation generates (greedy, or beam search with ``task.num_beams``) and scores
ROUGE-1/2/L and BLEU against the reference, next to the teacher-forced loss; the best model is the one
with the highest validation ROUGE-L. Records: ``{"text", "target"}`` (news-headlines, wiki-descriptions,
or a user's CSV/JSONL with a target column).
"""

from __future__ import annotations

import torch
from torch import nn

from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, generate, prompt_ids
from warmstart.objectives.lm_loss import IGNORE, head_loss, with_perplexity
from warmstart.tasks.base import Features, Task, pad
from warmstart.tasks.text_metrics import text_stats, with_bleu


class TextToTextTask(Task):
    name = "text_to_text"
    kind = "seq2seq"

    def bind(self, tokenizer, config_json: dict, family) -> None:
        self.tokenizer, self.model_type = tokenizer, family.name
        self.decoder_only, self.bos_first = family.model.decoder_only, family.model.bos_first
        if not family.model.generates:
            raise WarmstartError(
                f"text_to_text needs a model that writes text, the run holds a {self.model_type} encoder",
                "start from a t5, bart or gpt2 run (`warmstart pretrain --preset t5-tiny ...`)",
            )
        # the transformers class of the family's own LM objective (T5ForConditionalGeneration, ...)
        self.hf_architecture = family.objective.hf_architecture
        self.decoder_start = config_json.get("decoder_start_token_id")

    def labels(self, records: list[dict]) -> list[str]:
        return []

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> TextPairs:
        c = self.cfg
        sources, targets, refs = [], [], []
        for r in records:
            target = str(r.get("target", "")).strip()  # no target key at all: an input to predict for
            if not target and "target" in r:
                raise WarmstartError(
                    f"{where} has an example with an empty target (input: {r['text'][:60]!r})",
                    "drop empty targets from the data, or fix the target column",
                )
            source = prompt_ids(tokenizer, c.prefix + r["text"], self)
            body = tokenizer.encode(target)[: c.max_target_length - 2]
            if self.decoder_only:
                source = source[: c.max_length - c.max_target_length - 1] + tokenizer.encode(c.separator)
                target_ids = body + [tokenizer.eos_id]
            else:
                source = source[: c.max_length - 1] + source[-1:]  # keep the closing </s>
                first = [tokenizer.bos_id] if self.bos_first else []
                target_ids = first + body + [tokenizer.eos_id]
            sources.append(source)
            targets.append(target_ids)
            refs.append(target)
        return TextPairs(sources, targets, refs, tokenizer.pad_id, self.decoder_start, self.decoder_only)

    def build(self, model: nn.Module, labels: list[str]) -> nn.Module:
        return TextToTextUnit(model, self)


class TextPairs(Features):
    def __init__(self, sources, targets, refs, pad_id: int, start: int | None, decoder_only: bool):
        self.sources, self.targets, self.refs = sources, targets, refs
        self.pad_id, self.start, self.decoder_only = pad_id, start, decoder_only
        self.lengths = [len(s) + len(t) for s, t in zip(sources, targets)]

    def take(self, idx) -> dict:
        idx = list(idx)
        src, tgt = [self.sources[i] for i in idx], [self.targets[i] for i in idx]
        batch = {"sources": src, "references": [self.refs[i] for i in idx]}
        if self.decoder_only:  # prompt + completion in one sequence; loss on the completion only
            seqs = [s + t for s, t in zip(src, tgt)]
            ids = pad(seqs, self.pad_id)
            labels = pad([[IGNORE] * len(s) + t for s, t in zip(src, tgt)], IGNORE)
            mask = pad([[1] * len(s) for s in seqs], 0, ids.shape[1])
            return {**batch, "input_ids": ids, "attention_mask": mask, "labels": labels}
        ids = pad(src, self.pad_id)
        dec = pad([[self.start] + t[:-1] for t in tgt], self.pad_id)
        return {
            **batch,
            "input_ids": ids,
            "attention_mask": pad([[1] * len(s) for s in src], 0, ids.shape[1]),
            "decoder_input_ids": dec,
            "decoder_attention_mask": pad([[1] * len(t) for t in tgt], 0, dec.shape[1]),
            "labels": pad(tgt, IGNORE),
        }


class TextToTextUnit(nn.Module):
    best_metric = ("rougeL", "max")

    def __init__(self, model: nn.Module, task: TextToTextTask):
        super().__init__()
        self.model = model
        self.task = [task]  # a list keeps it out of the module tree
        self.decoder_only = task.decoder_only

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        if self.decoder_only:
            hidden = self.model(batch["input_ids"], batch["attention_mask"])
            loss, stats = head_loss(self.model, hidden[:, :-1], batch["labels"][:, 1:], self.training)
        else:
            hidden = self.model(
                batch["input_ids"],
                batch["attention_mask"],
                batch["decoder_input_ids"],
                batch["decoder_attention_mask"],
            )
            loss, stats = head_loss(self.model, hidden, batch["labels"], self.training)
        if not self.training:
            stats.update(text_stats(self.generate(batch["sources"]), batch["references"]))
        return loss, stats

    def generate(self, sources: list[list[int]]) -> list[str]:
        task, tok = self.task[0], self.task[0].tokenizer
        beams = task.cfg.num_beams
        cfg = GenerationConfig(
            max_new_tokens=task.cfg.max_target_length,
            strategy="beam" if beams > 1 else "greedy",
            num_beams=max(beams, 1),
        )
        start = task.decoder_start if not self.decoder_only else None
        out = generate(self.model, sources, cfg, eos_id=tok.eos_id, pad_id=tok.pad_id, decoder_start_id=start)
        return [tok.decode(ids).strip() for ids in out]

    @torch.no_grad()
    def predict(self, batch: dict) -> list[dict]:
        return [{"generated": text} for text in self.generate(batch["sources"])]

    @staticmethod
    def summarize(means: dict) -> dict:
        return with_bleu(with_perplexity(means))
