"""Token classification: a linear layer on every token; entity F1 for BIO tags, token accuracy for others.

Words are split into sub-words with the tokenizer's pre-tokenized encoding; each word's tag sits on its
FIRST sub-word, every other position (later sub-words, specials, padding) is ignored (-100). Words cut off by
``max_length`` keep their gold tags and are predicted "O" (or the fallback tag), so they count as errors,
not as dropped.

Two kinds of tag sets:
- BIO (NER, chunking: some tag starts with ``B-`` or ``I-``): entities follow seqeval's default (conlleval)
  reading, so IOB1 data works too; precision, recall and F1 are micro-averaged over entities, F1 picks the
  best checkpoint, and word accuracy is reported beside them.
- any other tags (part of speech): word (token) accuracy, which also picks the best checkpoint.

A tag in validation or test that the training split lacks is refused with the count (``task.unseen_tags=
refuse``, the default), mapped to a fallback tag (``task.unseen_tags=fallback``: ``task.fallback_tag``, or
when that is empty "O" for BIO tags and the most frequent training tag otherwise), with a line saying how
many words were mapped, or kept (``task.unseen_tags=keep``): a class of the head that no training word has,
so those words count as errors unless the model predicts it, as transformers' run_ner does with a
``datasets`` ClassLabel's full tag list.
"""

from __future__ import annotations

import sys
from collections import Counter

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer as _HFTokenizer
from torch import nn

from warmstart.errors import WarmstartError
from warmstart.nn.dropout import Dropout
from warmstart.tasks.base import Features, Task, encoder_inputs, pad
from warmstart.tasks.classification import init_head
from warmstart.tasks.readers import TokenIds, generative, head_dropout, head_std, token_states

IGNORE = -100


# ---------------------------------------------------------------- entities (seqeval's default, exactly)


def _ends(prev: str, tag: str, prev_type: str, type_: str) -> bool:
    return (
        prev in ("E", "S")
        or (prev in ("B", "I") and tag in ("B", "S", "O"))
        or (prev not in ("O", ".") and prev_type != type_)
    )


def _starts(prev: str, tag: str, prev_type: str, type_: str) -> bool:
    return (
        tag in ("B", "S")
        or (prev in ("E", "S", "O") and tag in ("E", "I"))
        or (tag not in ("O", ".") and prev_type != type_)
    )


def entities(tags: list[str]) -> set[tuple[str, int, int]]:
    """The entities of one tag sequence as ``(type, start, end)`` word indices, ``end`` INCLUSIVE.

    A line-for-line port of ``seqeval.metrics.sequence_labeling.get_entities`` (prefix mode), which is
    conlleval's chunking: malformed sequences (I- after O, a type switch inside an entity) are read the same
    way seqeval reads them.
    """
    found = set()
    prev, prev_type, begin = "O", "", 0
    for i, chunk in enumerate([*tags, "O"]):
        tag, type_ = chunk[:1], chunk[1:].split("-", maxsplit=1)[-1] or "_"
        if _ends(prev, tag, prev_type, type_):
            found.add((prev_type, begin, i - 1))
        if _starts(prev, tag, prev_type, type_):
            begin = i
        prev, prev_type = tag, type_
    return found


def entity_counts(gold: list[str], pred: list[str]) -> tuple[int, int, int]:
    """(true positives, predicted entities, gold entities) of one sentence; summed, they give seqeval's
    micro precision = tp / predicted and recall = tp / gold."""
    g, p = entities(gold), entities(pred)
    return len(g & p), len(p), len(g)


# ---------------------------------------------------------------- the task


class TaggingTask(Task):
    """Records ``{"text", "tokens": [str], "tags": [str]}``; BIO (or IOB1) tags, "O" outside entities."""

    name = "tagging"
    kind = "tagging"
    hf_architecture = "BertForTokenClassification"
    hf_head = (("classifier", "classifier"),)
    pipeline_tag = "token-classification"
    peft_task_type = "TOKEN_CLS"
    serve_input = "text"
    served_as = "answer"
    example = 'model.predict([{"tokens": ["A", "sentence", "to", "tag", "."]}])'
    study_baseline = "frequent_tag"

    def labels(self, records: list[dict]) -> list[str]:
        """The tag names. BIO tags: "O" first, then the others sorted, each entity type with both its B- and
        I- tag (a validation I-X whose B-X was seen in training is not unseen). Other tags: sorted; the
        most frequent one first (the fallback for unseen tags and for words cut off by max_length)."""
        counts = Counter(t for r in records for t in r["tags"])
        tags = set(counts)
        if not is_bio(tags):
            top = counts.most_common(1)[0][0] if counts else "O"
            return [top, *sorted(tags - {top})]
        for t in list(tags):
            if t[:2] in ("B-", "I-"):
                tags.update({"B-" + t[2:], "I-" + t[2:]})
        tags.discard("O")
        return ["O", *sorted(tags)]

    def run_labels(self, splits: dict[str, list[dict]]) -> list[str]:
        """The training tags; with task.unseen_tags=keep, then the other splits' tags it lacks (sorted, a BIO
        type with both its tags), said in one line."""
        labels = self.labels(splits["train"])
        if self.cfg.unseen_tags != "keep":
            return labels
        others = [r for name, rows in splits.items() if name != "train" for r in rows if r.get("tags")]
        known = set(labels)
        unseen, shown = _unseen_tags(others, known)
        if not unseen:
            return labels
        added = [t for t in self.labels(others) if t not in known] if is_bio(known) else []
        added = added or sorted(unseen)
        print(
            f"{sum(unseen.values()):,} words of the validation and test splits have {len(unseen)} tags the "
            f"training split lacks, kept as classes the model never trains on (an error unless predicted): "
            f"{shown}",
            file=sys.stderr,
        )
        return [*labels, *added]

    def encode(self, records: list[dict], tokenizer, labels: list[str], where: str) -> TaggingFeatures:
        """Tokenize one split. Records without tokens are skipped (they hold no tags and no entities; an
        all-empty batch would have no loss), and ``features.skipped`` counts them. Unseen tags: refused or
        mapped (module docstring). ``"tags": None``: an input to predict, with no gold tags (the first
        label stands in for them: a placeholder no prediction reads)."""
        records = [r if r.get("tags", ()) is not None else {**r, "tags": [labels[0]] * len(r["tokens"])}
                   for r in records]  # fmt: skip
        records = self._unseen(records, labels, where)
        return TaggingFeatures(records, tokenizer, labels, self.cfg.max_length, where)

    def _unseen(self, records: list[dict], labels: list[str], where: str) -> list[dict]:
        known = set(labels)
        unseen, shown = _unseen_tags(records, known)
        if not unseen:
            return records
        total = sum(len(r.get("tags", ())) for r in records)
        what = f"{sum(unseen.values()):,} of {total:,} words in {where} have {len(unseen)} tags"
        if self.cfg.unseen_tags != "fallback":  # keep: tags the run's head has no class for (a new file)
            raise WarmstartError(
                f"{what} that the training split lacks: {shown}",
                "pass task.unseen_tags=fallback to map them to task.fallback_tag (default: "
                f"'{labels[0]}') or task.unseen_tags=keep to score them as errors, or split the data so "
                "that training holds every tag",
            )
        fallback = self.cfg.fallback_tag or labels[0]
        if fallback not in known:
            raise WarmstartError(
                f"task.fallback_tag '{fallback}' is not a training tag",
                f"use one of {', '.join(labels[:20])}",
            )
        print(f"{what} unseen in training, mapped to '{fallback}': {shown}", file=sys.stderr)
        return [
            {**r, "tags": [t if t in known else fallback for t in r["tags"]]} if "tags" in r else r
            for r in records
        ]

    def build(self, encoder: nn.Module, labels: list[str]) -> TokenClassifier:
        if generative(encoder):
            return DecoderTagger(encoder, labels, self.token_ids)
        return TokenClassifier(encoder, labels)


def _unseen_tags(records: list[dict], known: set[str]) -> tuple[Counter, str]:
    """(how often each tag outside ``known`` occurs in ``records``, the ten most frequent as a line)."""
    unseen = Counter(t for r in records for t in r.get("tags", ()) if t not in known)
    return unseen, ", ".join(f"{t} ({n:,})" for t, n in unseen.most_common(10))


def _truncating_copy(tokenizer, max_length: int) -> _HFTokenizer:
    """A private copy of the tokenizer that truncates (the shared backend must never be changed)."""
    needed = tokenizer.backend.num_special_tokens_to_add(False) + 1
    if max_length < needed:
        raise WarmstartError(f"max_length {max_length} is too short for tagging", f"use at least {needed}")
    copy = _HFTokenizer.from_str(tokenizer.backend.to_str())
    copy.no_padding()
    copy.enable_truncation(max_length)
    return copy


class TaggingFeatures(Features):
    """One split, tokenized once. Per row: input ids, token labels on first sub-words, and per WORD the gold
    tag id and the position of its first sub-word (-1 when truncation cut the word off, or when the word
    has no sub-word at all, e.g. only control characters: such words are predicted "O")."""

    def __init__(self, records: list[dict], tokenizer, labels: list[str], max_length: int, where: str):
        label2id = {t: i for i, t in enumerate(labels)}
        kept = []
        for n, r in enumerate(records):
            if len(r["tokens"]) != len(r["tags"]):
                raise WarmstartError(
                    f"{where}: record {n} has {len(r['tokens'])} tokens but {len(r['tags'])} tags",
                    "give every token exactly one tag",
                )
            if r["tokens"]:
                kept.append(r)
        self.skipped = len(records) - len(kept)
        unknown = sorted({t for r in kept for t in r["tags"]} - set(label2id))
        if unknown:
            raise WarmstartError(
                f"{where} has tags the model was not trained on: {', '.join(unknown[:10])}",
                f"the known tags (from the training split) are: {', '.join(labels[:30])}",
            )
        tok = _truncating_copy(tokenizer, max_length)
        encodings = tok.encode_batch([list(r["tokens"]) for r in kept], is_pretokenized=True)
        self.ids, self.types, self.token_labels, self.starts, self.word_tags = [], [], [], [], []
        for r, enc in zip(kept, encodings):
            tags = [label2id[t] for t in r["tags"]]
            starts = [-1] * len(tags)
            token_labels = [IGNORE] * len(enc.ids)
            for pos, word in enumerate(enc.word_ids):
                if word is not None and starts[word] < 0:
                    starts[word], token_labels[pos] = pos, tags[word]
            self.ids.append(enc.ids)
            self.types.append(enc.type_ids)
            self.token_labels.append(token_labels)
            self.starts.append(starts)
            self.word_tags.append(tags)
        self.tokens = [list(r["tokens"]) for r in kept]
        self.lengths = [len(x) for x in self.ids]
        self.pad_id = tokenizer.pad_id if tokenizer.pad_id is not None else 0

    def take(self, idx) -> dict:
        idx = list(idx)
        batch = encoder_inputs([self.ids[i] for i in idx], [self.types[i] for i in idx], self.pad_id)
        batch["labels"] = pad([self.token_labels[i] for i in idx], IGNORE, batch["input_ids"].shape[1])
        batch["word_starts"] = pad([self.starts[i] for i in idx], -1)
        batch["word_labels"] = pad([self.word_tags[i] for i in idx], IGNORE, batch["word_starts"].shape[1])
        batch["tokens"] = [self.tokens[i] for i in idx]
        return batch


def with_f1(means: dict) -> dict:
    """Adds entity F1 = 2PR / (P + R); P or R is 0 when nothing was predicted or nothing was gold."""
    out = dict(means)
    p, r = out.setdefault("precision", 0.0), out.setdefault("recall", 0.0)
    out["f1"] = 2 * p * r / (p + r) if p + r else 0.0
    return out


def is_bio(tags) -> bool:
    """Whether a tag set is BIO / IOB1 (some tag starts with B- or I-), read as entities."""
    return any(t[:2] in ("B-", "I-") for t in tags)


class TokenClassifier(nn.Module):
    """Encoder + dropout + a linear layer on every token; loss = mean cross-entropy over first sub-words.

    In eval mode ``forward`` also returns word accuracy and, for BIO tags, entity counts (``precision``:
    (tp, predicted), ``recall``: (tp, gold)); ``summarize`` derives F1. Training steps skip them (the loop
    only uses the loss). The best checkpoint is chosen by F1 (BIO) or word accuracy (other tags).
    """

    label_smoothing = 0.0  # task.label_smoothing (finetune sets it)

    def __init__(self, encoder: nn.Module, labels: list[str]):
        super().__init__()
        c = encoder.config
        self.set_labels(labels)
        self.encoder = encoder
        self.drop = Dropout(c.hidden_dropout_prob)
        self.classifier = init_head(nn.Linear(c.hidden_size, len(self.labels)), c.initializer_range)

    def set_labels(self, labels: list[str]) -> None:
        self.labels = list(labels)
        self.bio = is_bio(self.labels)
        self.best_metric = ("f1", "max") if self.bio else ("accuracy", "max")
        # words without a prediction (cut off by max_length): "O", or the first label (most frequent)
        self.outside = self.labels.index("O") if "O" in self.labels else 0

    def logits(self, batch: dict) -> torch.Tensor:
        hidden = self.encoder(batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids"))
        return self.classifier(self.drop(hidden)).float()

    def word_predictions(self, logits: torch.Tensor, batch: dict) -> torch.Tensor:
        """(B, W) predicted tag ids per word: the first sub-word's argmax, "O" for words without one."""
        starts = batch["word_starts"]
        pred = logits.argmax(-1).gather(1, starts.clamp(min=0))
        return pred.masked_fill(starts < 0, self.outside)

    def forward(self, batch: dict):
        logits = self.logits(batch)
        labels = batch["labels"]
        smoothing = self.label_smoothing if self.training else 0.0  # task.label_smoothing: training only
        flat = (logits.flatten(0, 1), labels.flatten())
        loss_sum = F.cross_entropy(*flat, ignore_index=IGNORE, reduction="sum", label_smoothing=smoothing)
        n = (labels != IGNORE).sum()
        stats = {"loss": (loss_sum.detach(), n)}
        if self.training:
            return loss_sum / n.clamp(min=1), stats
        gold = batch["word_labels"]
        pred = self.word_predictions(logits, batch)
        words = gold != IGNORE
        stats["accuracy"] = (((pred == gold) & words).sum(), words.sum())
        if not self.bio:
            return loss_sum / n.clamp(min=1), stats
        counts = words.sum(1).tolist()
        tp = n_pred = n_gold = 0
        for g, p in zip(self._tags(gold, counts), self._tags(pred, counts)):
            a, b, c = entity_counts(g, p)
            tp, n_pred, n_gold = tp + a, n_pred + b, n_gold + c
        stats["precision"], stats["recall"] = (tp, n_pred), (tp, n_gold)
        return loss_sum / n.clamp(min=1), stats

    def _tags(self, ids: torch.Tensor, counts: list[int]) -> list[list[str]]:
        return [[self.labels[j] for j in row[:k]] for row, k in zip(ids.tolist(), counts)]

    def gold_and_predicted(self, batch: dict, logits: torch.Tensor | None = None):
        """(gold, predicted) tag ids of every word of a batch (for ``tasks.breakdown``); ``logits``: the
        batch's, already computed."""
        gold = batch["word_labels"]
        pred = self.word_predictions(self.logits(batch) if logits is None else logits, batch)
        words = gold != IGNORE
        return gold[words], pred[words]

    def summarize(self, means: dict) -> dict:
        """Adds entity F1 for BIO tags (``with_f1``); other tags keep loss and accuracy."""
        return with_f1(means) if self.bio else dict(means)

    @torch.no_grad()
    def predict(self, batch: dict) -> list[dict]:
        """Per example: its words, one tag per word, and the entities (word indices, ``end`` inclusive)."""
        logits = self.logits(batch)
        pred = self._tags(self.word_predictions(logits, batch), [len(t) for t in batch["tokens"]])
        rows = []
        for tokens, tags in zip(batch["tokens"], pred):
            if not self.bio:
                rows.append({"tokens": tokens, "tags": tags})
                continue
            found = sorted(entities(tags), key=lambda e: (e[1], e[2]))
            rows.append(
                {
                    "tokens": tokens,
                    "tags": tags,
                    "entities": [
                        {"type": t, "start": s, "end": e, "text": " ".join(tokens[s : e + 1])}
                        for t, s, e in found
                    ],
                }
            )
        return rows


class DecoderTagger(TokenClassifier):
    """The token classifier on a decoder or encoder-decoder ``model`` (tasks/readers.py): GPT-2's states,
    T5's encoder's (as T5ForTokenClassification); the family's own dropout before the linear layer."""

    def __init__(self, model: nn.Module, labels: list[str], ids: TokenIds):
        nn.Module.__init__(self)
        c = model.config
        self.set_labels(labels)
        self.model, self.ids = model, ids
        self.drop = Dropout(head_dropout(c))
        self.classifier = init_head(nn.Linear(c.hidden_size, len(self.labels)), head_std(c))

    def logits(self, batch: dict) -> torch.Tensor:
        hidden = token_states(self.model, batch, self.ids, encoder_only=True)
        return self.classifier(self.drop(hidden)).float()
