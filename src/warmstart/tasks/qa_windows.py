"""Extractive QA inputs: question + context pairs, long contexts cut into overlapping windows.

Each window is ``[CLS] question [SEP] context-piece [SEP]`` (or the tokenizer's own pair template: the special
tokens and segment ids are read off its post-processor, so BPE and Unigram tokenizers work too). The question
and the context are tokenized once, without truncation; windows are then slices of the context's tokens,
``room = max_length - specials - len(question)`` tokens long, each starting ``room - doc_stride`` tokens after
the previous one, so consecutive windows share ``doc_stride`` tokens (Hugging Face's ``stride``).

The question is never truncated unless it alone is too long: when it would leave fewer than
``doc_stride + 1`` context tokens per window (windows could not advance), it is cut to its first
``max_length - specials - doc_stride - 1`` tokens.

Training targets are the first token of the first gold answer (start) and its last token (end) when the whole
answer lies inside the window, else both 0 (the first token, [CLS]): an answer that crosses a window
boundary is labelled only in the windows that hold it fully. v1 data is labelled the same way, as BERT does.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

import torch

from warmstart.data.squad import checked_answers
from warmstart.errors import WarmstartError
from warmstart.tasks.base import Features, encoder_inputs


def pair_template(backend) -> tuple:
    """Special tokens (id, segment id) before the question, between the texts and after the context,
    and the segment ids of question and context tokens: read off the encoding of a dummy pair."""
    pair = backend.encode("a", "b", add_special_tokens=True)
    parts: list[list[tuple[int, int]]] = [[], [], []]
    part = 0
    for token, seq, typ in zip(pair.ids, pair.sequence_ids, pair.type_ids):
        if seq is None:
            parts[part].append((token, typ))
        else:
            part = 1 + seq
    types = {seq: typ for seq, typ in zip(pair.sequence_ids, pair.type_ids) if seq is not None}
    return parts[0], parts[1], parts[2], (types.get(0, 0), types.get(1, 1))


def window_starts(n_tokens: int, room: int, stride: int) -> list[int]:
    """First context token of each window: ``room`` tokens each, overlapping by ``stride``."""
    starts, step = [0], room - stride
    while starts[-1] + room < n_tokens:
        starts.append(starts[-1] + step)
    return starts


def answer_tokens(offsets: list[tuple[int, int]], char_start: int, char_end: int) -> tuple[int, int]:
    """First and last context token overlapping characters [char_start, char_end); (-1, -1): none."""
    first = bisect.bisect_right([o[1] for o in offsets], char_start)  # first token ending after char_start
    last = bisect.bisect_left([o[0] for o in offsets], char_end) - 1  # last token starting before char_end
    return (first, last) if first <= last else (-1, -1)


def check_record(record: dict, where: str, number: int) -> None:
    """A QA record has id, question, context and answers whose offsets match the context (its answers are
    then the list layout, whichever layout they came in)."""
    missing = [key for key in ("id", "question", "context", "answers") if key not in record]
    if missing:
        raise WarmstartError(
            f"{where}: record {number} has no {', '.join(missing)}",
            "QA records need id, question, context and answers ([] when unanswerable)",
        )
    at = f"{where}: record {number}, question {record['id']}"
    record["answers"] = checked_answers(record["answers"], record["context"], at)


class QAFeatures(Features):
    """The windows of one split, in example order (an example's windows are consecutive).

    Per window: ids, segment ids, target start/end token, its example's index and ``offsets`` (per token: the
    (start, end) characters in the context, None off the context). ``allow_null`` (task.null_answers): may
    decoding answer "" (SQuAD v2); None: when some record of the split has no answer (a run decides it once
    from its training split, so that a prediction does not depend on what else its input holds).
    """

    def num_examples(self) -> int:
        return len(self.examples)

    def __init__(
        self, records: list[dict], tokenizer, max_length: int, doc_stride: int, where: str, allow_null=None
    ):
        backend = tokenizer.backend
        before, middle, after, (q_type, c_type) = pair_template(backend)
        specials = len(before) + len(middle) + len(after)
        question_limit = max_length - specials - doc_stride - 1
        if question_limit < 1:
            raise WarmstartError(
                f"task.max_length {max_length} leaves no room for a question and a context window "
                f"overlapping by task.doc_stride {doc_stride}",
                f"use task.doc_stride below {max(0, max_length - specials - 2)} or a larger task.max_length",
            )
        for number, record in enumerate(records):
            check_record(record, where, number)
        self.pad_id = tokenizer.pad_id if tokenizer.pad_id is not None else 0
        self.allow_null = any(not r["answers"] for r in records) if allow_null is None else allow_null
        self.examples = [
            {"id": r["id"], "context": r["context"], "answers": [a["text"] for a in r["answers"]]}
            for r in records
        ]
        self.ids, self.types, self.offsets, self.targets, self.example_of = [], [], [], [], []
        self.first_window: list[int] = []
        questions = backend.encode_batch([r["question"] for r in records], add_special_tokens=False)
        contexts = backend.encode_batch([r["context"] for r in records], add_special_tokens=False)
        for index, (record, question, context) in enumerate(zip(records, questions, contexts)):
            q_ids = question.ids[:question_limit]
            room = max_length - specials - len(q_ids)
            span = (-1, -1)
            if record["answers"]:
                answer = record["answers"][0]
                begin = answer["answer_start"]
                span = answer_tokens(context.offsets, begin, begin + len(answer["text"]))
            head = [t for t, _ in before] + q_ids + [t for t, _ in middle]
            head_types = [t for _, t in before] + [q_type] * len(q_ids) + [t for _, t in middle]
            self.first_window.append(len(self.ids))
            for first in window_starts(len(context.ids), room, doc_stride):
                last = min(first + room, len(context.ids))
                piece = context.ids[first:last]
                self.ids.append(head + piece + [t for t, _ in after])
                self.types.append(head_types + [c_type] * len(piece) + [t for _, t in after])
                self.offsets.append([None] * len(head) + context.offsets[first:last] + [None] * len(after))
                inside = span[0] >= first and 0 <= span[1] < last
                self.targets.append(
                    (span[0] - first + len(head), span[1] - first + len(head)) if inside else (0, 0)
                )
                self.example_of.append(index)
        self.first_window.append(len(self.ids))
        self.lengths = [len(row) for row in self.ids]

    def take(self, idx) -> dict:
        idx = list(idx)
        batch = encoder_inputs([self.ids[i] for i in idx], [self.types[i] for i in idx], self.pad_id)
        width = batch["input_ids"].shape[1]
        offsets = [self.offsets[i] for i in idx]
        context = torch.zeros((len(idx), width), dtype=torch.bool)
        for row, offs in enumerate(offsets):
            context[row, : len(offs)] = torch.tensor([o is not None for o in offs])
        examples = [self.example_of[i] for i in idx]
        batch.update(
            start_positions=torch.tensor([self.targets[i][0] for i in idx], dtype=torch.long),
            end_positions=torch.tensor([self.targets[i][1] for i in idx], dtype=torch.long),
            context_mask=context,
            example_index=examples,
            offsets=offsets,
            examples={e: self.examples[e] for e in examples},
            allow_null=self.allow_null,
        )
        return batch

    def metric_batches(self, batch_size: int) -> Iterator[dict]:
        return self.eval_batches(batch_size)  # an example's windows must share a batch

    def prediction_batches(self, batch_size: int) -> Iterator[tuple[None, dict]]:
        return ((None, batch) for batch in self.eval_batches(batch_size))  # the examples in order

    def eval_batches(self, batch_size: int) -> Iterator[dict]:
        """Whole examples per batch: up to ``batch_size`` windows, more when one example has more."""
        begin = 0
        bounds = self.first_window
        for e in range(len(self.examples)):
            if bounds[e + 1] - bounds[begin] > batch_size and e > begin:
                yield self.take(range(bounds[begin], bounds[e]))
                begin = e
        if begin < len(self.examples):
            yield self.take(range(bounds[begin], bounds[-1]))
