"""A corpus among the members of ``--task multitask``: trained with the model family's own self-supervised
objective beside the text-to-text tasks, as T5 section 3.7 ("multi-task training") mixes its unsupervised
task with the supervised ones.

The corpus's training split (its documents, tokenized, joined by the document separator as pretraining packs
them) is cut into windows; each window drawn into a training batch is corrupted there by the family's
objective, with a generator seeded by (seed, batch index), so batch ``i`` stays a pure function of ``i``:

    t5    span corruption   input: text with spans dropped, one sentinel each; output: sentinel + span ...
    bart  denoising         input: <s> infilled, permuted text </s>;            output: <s> the text </s>
    gpt2  causal LM         the window's first token as the prompt, the rest as the completion

The objective's settings are its defaults (T5: noise density 0.15, mean span 3; BART: text infilling and
sentence permutation, mask 0.3). Windows are sized so the corrupted input fills ``task.max_length``. A corpus
member counts its windows as its examples (mixing rates, ``data.train_limit``) and has no validation or test
rows: the evaluation scores the supervised members only. The corpus is split with the supervised kinds'
held-out fractions (10% validation, 10% test, same ``data.split_seed``), so the held-out texts of a dataset
made from it (news-headlines from news, wiki-descriptions from wiki-leads) are never trained on.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator

from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.data.mixing import MixedBatches
from warmstart.data.order import step_generator
from warmstart.data.splits import DEFAULT_FRACTIONS
from warmstart.errors import WarmstartError

CORPUS = "corpus"  # the scoring tag of a corpus member's rows (they are never scored)
_SALT = 0x636F7270  # seeds the corruption apart from the task draws and the per-task orders


def corpus_objective(family, tokenizer, max_length: int) -> tuple[int, Callable]:
    """(window tokens, make(ids, generator) -> (input ids, output ids)) of the family's own objective, with
    its default settings; one clear error for a family whose objective has no text-to-text form."""
    objective = family.objective
    made = objective.text_pairs(max_length, tokenizer, *(cls() for cls in objective.sections.values()))
    if made is None:
        raise WarmstartError(
            f"a corpus in multitask.tasks is trained with the model family's own objective as text pairs, "
            f"and the {family.name} family's {objective.__name__} has none",
            "start from a t5 (span corruption), bart (denoising) or gpt2 (causal LM) run, or drop the corpus",
        )
    objective.check_tokenizer(tokenizer)
    return made


def held_out_options(options: DataOptions) -> DataOptions:
    """``options`` with the supervised kinds' validation and test fractions (unless given)."""
    validation, test = DEFAULT_FRACTIONS["seq2seq"]
    given = options.validation_fraction, options.test_fraction
    return dataclasses.replace(
        options,
        validation_fraction=validation if given[0] is None else given[0],
        test_fraction=test if given[1] is None else given[1],
    )


def _chunks(texts: Iterator[str], size: int) -> Iterator[list[str]]:
    while chunk := list(itertools.islice(texts, size)):
        yield chunk


def corpus_windows(name: str, options: DataOptions, tokenizer, width: int, limit: int | None = None):
    """The training split of the corpus ``name`` as windows of ``width`` token ids (documents tokenized and
    joined by the document separator; the last remainder is dropped), at most ``limit`` of them."""
    data = open_dataset(name, held_out_options(options))
    sep, windows, buffer = tokenizer.doc_sep_id, [], []
    for chunk in _chunks((t for t in data.texts("train") if t.strip()), 256):
        for ids in tokenizer.encode_batch(chunk):
            buffer += ids + [sep]
        full = len(buffer) // width
        windows += [buffer[k * width : (k + 1) * width] for k in range(full)]
        buffer = buffer[full * width :]
        if limit is not None and len(windows) >= limit:
            break
    windows = windows[:limit]
    if not windows:
        raise WarmstartError(
            f"the training split of the corpus {data.name} holds fewer than {width} tokens",
            "use a larger corpus or a shorter task.max_length",
        )
    return data.name, windows


class CorpusMixedBatches(MixedBatches):
    """Mixed batches whose corpus rows are corrupted with a generator seeded by (seed, batch index)."""

    def batch(self, index: int) -> dict:
        rows = [row for _, row in self.draws(index)]
        return self.features.take(rows, generator=step_generator(self.seed ^ _SALT, index))
