"""Text-to-text finetuning: an input text (behind an optional task prefix) -> an output text.

Encoder-decoders (T5, BART) read the input and are trained to write the output by teacher forcing; a
decoder (GPT-2) reads ``</s> prefix+input separator`` and is trained on the completion only (the prompt's
positions carry no loss). Evaluation generates (greedy, or beam search with ``task.num_beams``) and scores
ROUGE-1/2/L and BLEU against the reference, next to the teacher-forced loss; the best model is the one
with the highest validation ROUGE-L. Records: ``{"text", "target"}`` (news-headlines, wiki-descriptions,
or a user's CSV/JSONL with a target column).

QA, multiple-choice and labeled datasets are cast as text pairs the way UnifiedQA does, by the one formatter
that ``--task multitask`` uses too (:func:`text_records`, over ``warmstart.data.to_text``): ``question \n
context`` -> the answer, ``context \n (A) ... (B) ...`` (with a passage: ``question \\n (A) ... \\n
passage``) -> the right choice's text, a text -> its label word (yes/no for boolean labels). Their outputs
are also scored by exact match (and F1 for answers, SQuAD's). A row with choices is answered by the choice
whose text the model finds likeliest as its output (``task.choice_scoring``, ``choice_scoring.py``), not by
generating; its ``accuracy`` is the fraction of rows whose pick is right, and the best model is the one with
the highest validation accuracy. The teacher-forced accuracy of the output's tokens is ``token_accuracy``
(it was ``accuracy`` in batches without choices, where it read as the rows' accuracy).
"""

from __future__ import annotations

import torch
from torch import nn

from warmstart.data.to_text import parse_label_words, to_text
from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, generate, prompt_ids
from warmstart.objectives.lm_loss import IGNORE, head_loss, with_perplexity
from warmstart.tasks.base import Features, Task, pad
from warmstart.tasks.choice_scoring import choice_scoring, flatten, pick, target_log_probs
from warmstart.tasks.qa_decode import exact_match_score
from warmstart.tasks.text_metrics import output_scores, text_stats, with_bleu

# dataset kind -> how its generated outputs are scored (text_metrics.output_scores; "text": ROUGE/BLEU only)
SCORING = {"labeled": "label", "choice": "label", "qa": "answer", "seq2seq": "text"}


def text_records(
    rows: list[dict], kind: str, words: dict, where: str, prefix: str = "", **tags
) -> list[dict]:
    """Records of one dataset ``kind`` as text pairs ``{"text": prefix + input, "target", "answers"?,
    "scoring", **tags}``: the one formatter of text_to_text and multitask (``tags``: its task name). Choice
    rows also keep ``"choices"`` (their texts) and ``"choice"`` (the right one's index)."""
    tag = {"scoring": SCORING.get(kind, "text"), **tags}
    out = []
    for row, r in zip(rows, to_text(rows, kind, words, where), strict=True):
        if kind == "choice":
            r = {**r, "choices": [str(c) for c in row["choices"]], "choice": int(str(row["label"]).strip())}
        out.append({**r, "text": prefix + r["text"], **tag})
    return out


class TextToTextTask(Task):
    name = "text_to_text"
    kind = "seq2seq"
    kinds = tuple(SCORING)
    pipeline_tag = "text2text-generation"
    served_as = "generation"
    example = 'model.predict(["a text to rewrite"])'
    report_samples = True
    choice_scoring = "likelihood"  # task.choice_scoring, read by bind
    choice_data = False  # set by prepare: the data has choices, the best model is the most accurate

    def bind(self, tokenizer, config_json: dict, family) -> None:
        self.tokenizer, self.model_type, self.family = tokenizer, family.name, family
        self.decoder_only, self.bos_first = family.model.decoder_only, family.model.bos_first
        if not family.model.generates:
            raise WarmstartError(
                f"text_to_text needs a model that writes text, the run holds a {self.model_type} encoder",
                "start from a t5, bart or gpt2 run (`warmstart pretrain --preset t5-tiny ...`)",
            )
        # the transformers class of the family's own LM objective (T5ForConditionalGeneration, ...)
        self.hf_architecture = family.objective.hf_architecture
        self.decoder_start = config_json.get("decoder_start_token_id")
        self.choice_scoring = choice_scoring(self.cfg)  # a bad value refused before any data is read

    def labels(self, records: list[dict]) -> list[str]:
        return []

    def prepare(self, records: list[dict], kind: str, where: str) -> list[dict]:
        """QA, choice and labeled records as text pairs (task.label_words name the labels); seq2seq as is."""
        self.choice_data = self.choice_data or kind == "choice"
        return text_records(records, kind, parse_label_words(self.cfg.label_words), where)

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> TextPairs:
        c = self.cfg
        sources, targets, refs, golds, choices = [], [], [], [], {}
        for i, r in enumerate(records):
            target = str(r.get("target", "")).strip()  # no target key at all: an input to predict for
            if not target and "target" in r:
                raise WarmstartError(
                    f"{where} has an example with an empty target (input: {r['text'][:60]!r})",
                    "drop empty targets from the data, or fix the target column",
                )
            source = prompt_ids(tokenizer, c.prefix + r["text"], self)
            if self.decoder_only:
                source = source[: c.max_length - c.max_target_length - 1] + tokenizer.encode(c.separator)
            else:
                source = source[: c.max_length - 1] + source[-1:]  # keep the closing </s>
            if r.get("choices"):  # each choice as a target, for likelihood scoring
                options = [self.target_ids(tokenizer, str(x).strip()) for x in r["choices"]]
                choices[i] = (options, int(r.get("choice", -1)), [str(x).strip() for x in r["choices"]])
            sources.append(source)
            targets.append(self.target_ids(tokenizer, target))
            refs.append(target)
            golds.append(list(r.get("answers") or [target]))
        scoring = [r.get("scoring", "text") for r in records]
        pad_id, start = tokenizer.pad_id, self.decoder_start
        return TextPairs(sources, targets, refs, pad_id, start, self.decoder_only, scoring, golds, choices)

    def target_ids(self, tokenizer, text: str) -> list[int]:
        """The ids of an output text as a target: its tokens (cut to fit) and </s>, behind <s> for BART."""
        body = tokenizer.encode(text)[: self.cfg.max_target_length - 2]
        first = [tokenizer.bos_id] if self.bos_first and not self.decoder_only else []
        return first + body + [tokenizer.eos_id]

    def build(self, model: nn.Module, labels: list[str]) -> nn.Module:
        unit = TextToTextUnit(model, self)
        if self.choice_data:
            unit.best_metric = ("accuracy", "max")
        return unit


class TextPairs(Features):
    """Token ids of (input, output) pairs; ``scoring`` (per row: label, answer or text) and ``golds`` (the
    accepted outputs) go into the batches when given, for the output scores, and ``choices`` ({row: (its
    choices' target ids, the right one's index or -1, their texts)}) as ``batch["choices"]`` (per row: that,
    or None for a row without choices)."""

    def __init__(
        self,
        sources,
        targets,
        refs,
        pad_id: int,
        start: int | None,
        decoder_only: bool,
        scoring=None,
        golds=None,
        choices=None,
    ):
        self.sources, self.targets, self.refs = sources, targets, refs
        self.choices = dict(choices or {})
        self.pad_id, self.start, self.decoder_only = pad_id, start, decoder_only
        self.scoring = list(scoring) if scoring is not None else ["text"] * len(sources)
        self.golds = [list(g) for g in golds] if golds is not None else [[r] for r in refs]
        self.lengths = [len(s) + len(t) for s, t in zip(sources, targets)]

    def take(self, idx) -> dict:
        idx = list(idx)
        return self.pairs_batch([self.sources[i] for i in idx], [self.targets[i] for i in idx], idx)

    def pairs_batch(self, src: list[list[int]], tgt: list[list[int]], idx: list[int]) -> dict:
        """The batch of token-id pairs ``src``/``tgt`` (the rows ``idx``: references, scoring, golds)."""
        batch = {"sources": src, "references": [self.refs[i] for i in idx]}
        batch["scoring"], batch["golds"] = [self.scoring[i] for i in idx], [self.golds[i] for i in idx]
        if any(i in self.choices for i in idx):  # a list, one item per row: processes share rows out
            batch["choices"] = [self.choices.get(i) for i in idx]
        return {**batch, **pair_tensors(src, tgt, self.pad_id, self.start, self.decoder_only)}


def pair_tensors(src: list[list[int]], tgt: list[list[int]], pad_id: int, start, decoder_only: bool) -> dict:
    """The padded tensors of (input, output) pairs: a decoder reads prompt + completion as one sequence, its
    loss on the completion only; an encoder-decoder reads the input and is teacher-forced on the output."""
    if decoder_only:
        seqs = [s + t for s, t in zip(src, tgt)]
        ids = pad(seqs, pad_id)
        labels = pad([[IGNORE] * len(s) + t for s, t in zip(src, tgt)], IGNORE)
        mask = pad([[1] * len(s) for s in seqs], 0, ids.shape[1])
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}
    ids = pad(src, pad_id)
    dec = pad([[start] + t[:-1] for t in tgt], pad_id)
    return {
        "input_ids": ids,
        "attention_mask": pad([[1] * len(s) for s in src], 0, ids.shape[1]),
        "decoder_input_ids": dec,
        "decoder_attention_mask": pad([[1] * len(t) for t in tgt], 0, dec.shape[1]),
        "labels": pad(tgt, IGNORE),
    }


def with_choices(batch: dict) -> dict[int, tuple]:
    """{row: (its choices' target ids, the right index or -1, their texts)} of the rows with choices."""
    return {k: c for k, c in enumerate(batch.get("choices") or ()) if c is not None}


class TextToTextUnit(nn.Module):
    best_metric = ("rougeL", "max")

    def __init__(self, model: nn.Module, task: TextToTextTask):
        super().__init__()
        self.model = model
        self.task = [task]  # a list keeps it out of the module tree
        self.decoder_only = task.decoder_only

    def states(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """(hidden states, labels) aligned position by position: a decoder's states predict the next token."""
        if self.decoder_only:
            hidden = self.model(batch["input_ids"], batch["attention_mask"])
            return hidden[:, :-1], batch["labels"][:, 1:]
        hidden = self.model(
            batch["input_ids"],
            batch["attention_mask"],
            batch["decoder_input_ids"],
            batch["decoder_attention_mask"],
        )
        return hidden, batch["labels"]

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict]:
        loss, stats = head_loss(self.model, *self.states(batch), self.training)
        if not self.training:
            generated, picks = self.outputs(batch)
            stats.update(text_stats(generated, batch["references"]))
            if "accuracy" in stats:  # teacher-forced: per token, never beside the rows' choice accuracy
                stats["token_accuracy"] = stats.pop("accuracy")
            stats.update(self.choice_accuracy(batch, generated, picks))
            for scoring in dict.fromkeys(batch.get("scoring", ())):  # exact match / F1 of labels and answers
                rows = [k for k, s in enumerate(batch["scoring"]) if s == scoring]
                scores = output_scores(
                    scoring, [generated[k] for k in rows], [batch["golds"][k] for k in rows]
                )
                for key, (total, n) in scores.items():
                    before = stats.get(key, (0.0, 0))
                    stats[key] = (before[0] + total, before[1] + n)
        return loss, stats

    def choice_accuracy(self, batch: dict, outputs: list[str], picks: dict) -> dict:
        """``accuracy`` of the batch's rows with choices and a right one: the pick is it (a generated output:
        it matches it). {} for a batch without such rows."""
        rows = {k: gold for k, (_, gold, _) in with_choices(batch).items() if gold >= 0}
        if not rows:
            return {}
        right = sum(
            picks[k][0] == gold if k in picks else exact_match_score(outputs[k], batch["golds"][k])
            for k, gold in rows.items()
        )
        return {"accuracy": (float(right), len(rows))}

    def outputs(self, batch: dict) -> tuple[list[str], dict[int, tuple[int, list[float]]]]:
        """The output text of every row, and ``picks`` ({row: (the chosen index, every choice's score)}): a
        row with choices is answered by its likeliest choice (``task.choice_scoring``: likelihood or mean;
        generate: like the others), the others are generated."""
        options = with_choices(batch)
        mode = self.task[0].choice_scoring
        picks = self.choose(batch["sources"], options, mode) if options and mode != "generate" else {}
        rest = [k for k in range(len(batch["sources"])) if k not in picks]
        written = iter(self.generate([batch["sources"][k] for k in rest]) if rest else [])
        texts = [
            options[k][2][picks[k][0]] if k in picks else next(written) for k in range(len(batch["sources"]))
        ]
        return texts, picks

    @torch.no_grad()
    def choose(self, sources: list[list[int]], options: dict, mode: str) -> dict:
        """{row: (index of its likeliest choice, every choice's score)} of ``options`` ({row: (target ids,
        ...)}, as ``with_choices`` gives): all their choices in one forward pass."""
        task = self.task[0]
        src, tgt, owners = flatten(sources, {k: option[0] for k, option in options.items()})
        device = next(self.model.parameters()).device
        pairs = pair_tensors(src, tgt, task.tokenizer.pad_id, task.decoder_start, self.decoder_only)
        hidden, labels = self.states({k: v.to(device) for k, v in pairs.items()})
        return pick(*target_log_probs(self.model, hidden, labels), owners, mode)

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
        """{"generated": the output}; a row with choices adds ``choice`` (its index) and ``scores``."""
        texts, picks = self.outputs(batch)
        out = []
        for k, text in enumerate(texts):
            pred = {"generated": text}
            if k in picks:
                pred.update(choice=picks[k][0], scores=[round(x, 4) for x in picks[k][1]])
            out.append(pred)
        return out

    @staticmethod
    def summarize(means: dict) -> dict:
        """Perplexity, corpus BLEU, and exact match and F1 as percentages (SQuAD's scale)."""
        out = with_bleu(with_perplexity(means))
        return {k: 100.0 * v if k in ("exact_match", "f1") else v for k, v in out.items()}
