"""`warmstart prompt`: zero- and few-shot classification with a decoder (GPT-2) or an encoder-decoder (T5,
BART), no training.

A prompt is k demonstrations from the train split (the template filled with their label word) joined by the
separator, then the query's template cut right before ``{label}``. Each label is scored as the sum of the
log-probabilities of its word's tokens after ``</s> prompt`` (the document start gpt2 saw in training, as in
generation); the best score is the prediction. Tokens: the prompt's trailing spaces belong to the label, so
"...Answer: " scores ``encode(" " + word)`` after ``encode("...Answer:")``, the tokens "Answer: fresh" has in
the demonstrations (byte-level BPE glues a word to the space before it); a label after a newline scores
``encode(word)``. Overlong prompts lose their oldest demonstrations; the query is never cut.

An encoder-decoder reads the prompt as its encoder's input and scores each label word as its decoder's
whole output, the word's tokens then eos (``seq2seq_scores``), the way text_to_text trains targets.
"""

from __future__ import annotations

import random
import re
import statistics
import warnings
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from warmstart.checkpoints.load import load_generator
from warmstart.config import opt
from warmstart.data.catalog import open_dataset
from warmstart.data.dataset import DataOptions
from warmstart.errors import WarmstartError
from warmstart.train.checkpoint import write_json


@dataclass
class PromptConfig:
    template: str = opt("Review: {text}\nAnswer: {label}", "one example: {text}, then {label} (its word)")
    label_words: Any = opt(
        None, "label -> its word, e.g. label_words='fresh: good, rotten: bad' (default: names)"
    )
    shots: list[int] = opt([0, 1, 4, 8], "numbers of demonstrations k to compare, e.g. shots=0,1,4")
    seeds: int = opt(3, "draws of the k demonstrations per k (k=0 is scored once)")
    max_examples: int = opt(500, "evaluation examples: a seeded sample of the split")
    separator: str = opt("\n\n", "text between the demonstrations and before the query")
    calibrate: bool = opt(False, "also report contextual calibration (scores minus those of the query 'N/A')")
    batch_size: int = opt(16, "sequences per forward pass")

    def __post_init__(self):
        t, words = self.template, self.label_words
        if isinstance(words, str):  # from the command line: "{fresh: good, rotten: bad}" or "fresh:good,..."
            pairs = [p.split(":", 1) for p in words.strip().strip("{}").split(",") if p.strip()]
            words = {k.strip(): v.strip() for k, v in pairs} if all(len(p) == 2 for p in pairs) else words
        if isinstance(words, dict):
            self.label_words = words = {str(k): v for k, v in words.items()}
        self.shots = sorted(set(self.shots))
        checks = [
            ("{text}" in t and t.count("{label}") == 1 and t.index("{text}") < t.index("{label}"),
             f"the template {t!r} needs {{text}}, then {{label}} once", "e.g. template='{text} => {label}'"),
            (words is None or (isinstance(words, dict) and all(isinstance(v, str) and v.strip()
             for v in words.values())), f"label_words must map labels to words, got {words!r}",
             "write it as label_words='fresh: good, rotten: bad'"),
            (self.shots and all(k >= 0 for k in self.shots), f"shots must be numbers >= 0, got {self.shots}",
             "e.g. shots=0,1,4"),
            (self.seeds >= 1 and self.max_examples >= 1 and self.batch_size >= 1,
             "seeds, max_examples and batch_size must be at least 1", "set them to positive numbers"),
        ]  # fmt: skip
        for ok, problem, fix in checks:
            if not ok:
                raise WarmstartError(problem, fix)


class Prompt(str):
    """A prompt string that knows where it may be cut: ``cuts`` are the character offsets where each
    demonstration after the first, and the query, start. A plain string is never cut."""

    cuts: tuple[int, ...] = ()


def _fill(cfg: PromptConfig, text: str, word: str | None = None) -> str:
    head, tail = cfg.template.split("{label}", 1)
    head = head.replace("{text}", text)
    return head if word is None else head + word + tail.replace("{text}", text)


def build_prompt(examples: list[dict], query_text: str, cfg: PromptConfig) -> Prompt:
    """Demonstrations (records with text and label) filled with their label word, then the query's
    template up to ``{label}``, joined by the separator."""
    words = cfg.label_words or {}
    parts = [_fill(cfg, r["text"], words.get(str(r["label"]), str(r["label"]))) for r in examples]
    parts.append(_fill(cfg, query_text))
    prompt = Prompt(cfg.separator.join(parts))
    ends = [len(p) + len(cfg.separator) for p in parts[:-1]]
    prompt.cuts = tuple(sum(ends[: i + 1]) for i in range(len(ends)))
    return prompt


def _fit(tokenizer, prompt, text: str, room: int, what: str, context: int) -> tuple[list[int], bool]:
    """(ids of ``text``, whether demonstrations were dropped): a ``Prompt``'s oldest demonstrations go until
    at most ``room`` tokens remain; a query that does not fit alone is a WarmstartError (``what`` takes
    ``room`` plus the rest of the ``context``)."""
    ids = full = tokenizer.encode(text)
    for c in getattr(prompt, "cuts", ()) if len(ids) > room else ():
        ids = tokenizer.encode(text[c:])  # drop the oldest demonstrations until it fits
        if len(ids) <= room:
            break
    if len(ids) > room:
        raise WarmstartError(
            f"{what} take {len(ids) + context - room} tokens, more than the model's context of {context}",
            "use shorter texts, template or label words, or a model with a longer context",
        )
    return ids, ids is not full


def _encode(tokenizer, prompts, label_words, context):
    """(prompt ids after the document start, label ids per label) per prompt; the number of prompts cut."""
    encoded, cut = [], 0
    for p in prompts:
        head = p.rstrip(" ")
        conts = [tokenizer.encode(p[len(head) :] + w) for w in label_words]
        if not all(conts):
            raise WarmstartError(f"a label word in {label_words} has no tokens", "use non-empty label words")
        room = context - 1 - max(map(len, conts))
        ids, dropped = _fit(tokenizer, p, head, room, "a query and its longest label word", context)
        cut += dropped
        encoded.append((ids, conts))
    return encoded, cut


def _warn_cut(cut: int, prompts: int, context: int) -> None:
    if cut:
        warnings.warn(
            f"{cut} of {prompts} prompts were longer than the model's context of {context} tokens: "
            "their oldest demonstrations were dropped",
            stacklevel=3,
        )


def _sums(model, rows, queries, batch_size, bar):
    """Sum of log p(tokens[j] | row[: start + j + 1]) for each query (row, start, tokens); rows right-padded
    in batches of similar length, only the needed positions go through the output layer."""
    device = next(model.parameters(), torch.empty(0)).device
    by_row = defaultdict(list)
    for qi, (r, _, _) in enumerate(queries):
        by_row[r].append(qi)
    out = torch.zeros(len(queries), dtype=torch.float64)
    order = sorted(range(len(rows)), key=lambda r: len(rows[r]))
    for i in range(0, len(order), batch_size):
        batch = order[i : i + batch_size]
        ids = torch.zeros(len(batch), max(len(rows[r]) for r in batch), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for b, r in enumerate(batch):
            ids[b, : len(rows[r])], mask[b, : len(rows[r])] = torch.tensor(rows[r]), 1
        hidden = model(ids.to(device), mask.to(device))
        picks = [(b, s + j, t, qi) for b, r in enumerate(batch) for qi in by_row[r]
                 for j, t in enumerate(queries[qi][2]) for s in [queries[qi][1]]]  # fmt: skip
        b_idx, t_idx, tok, owner = (torch.tensor(x) for x in zip(*picks))
        logits = model.lm_logits(hidden[b_idx.to(device), t_idx.to(device)]).float()
        logp = logits.log_softmax(-1).gather(1, tok.to(device)[:, None])[:, 0]
        out.index_add_(0, owner, logp.double().cpu())
        if bar is not None:
            bar.update(len(batch))
    return out


def label_scores(model, tokenizer, prompts: list[str], label_words: list[str], batch_size: int = 16,
                 progress: bool = False, decoder_start: int | None = None) -> torch.Tensor:  # fmt: skip
    """(N, L) sums of the log-probabilities of each label word's tokens as a continuation of each prompt
    (an encoder-decoder: ``seq2seq_scores``, its decoder starting with ``decoder_start``). A prompt longer
    than the context loses its oldest demonstrations (a ``Prompt`` from build_prompt; one warning counts
    them); one whose query and label do not fit raises WarmstartError."""
    from tqdm.auto import tqdm

    if not getattr(model, "decoder_only", True):  # T5, BART
        return seq2seq_scores(model, tokenizer, prompts, label_words, batch_size, progress, decoder_start)
    context = model.config.n_positions
    start = tokenizer.eos_id if tokenizer.eos_id is not None else tokenizer.doc_sep_id
    encoded, cut = _encode(tokenizer, prompts, label_words, context)
    _warn_cut(cut, len(prompts), context)
    rows, index, queries = [], {}, []
    for ids, conts in encoded:  # a row per distinct input: single-token labels share the bare prompt's row
        for cont in conts:
            key = tuple([start] + ids + cont[:-1])
            if key not in index:
                index[key] = len(rows)
                rows.append(list(key))
            queries.append((index[key], len(ids), cont))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), tqdm(total=len(rows), unit="seq", desc="scoring", disable=not progress) as bar:
            sums = _sums(model, rows, queries, batch_size, bar)
    finally:
        model.train(was_training)
    return sums.view(len(prompts), len(label_words))


def seq2seq_scores(model, tokenizer, prompts: list[str], label_words: list[str], batch_size: int = 16,
                   progress: bool = False, decoder_start: int | None = None) -> torch.Tensor:  # fmt: skip
    """(N, L) log-likelihoods of each label word as an encoder-decoder's whole output (its tokens, then eos;
    a ``bos_first`` model's <s> before them is given, not scored) with the prompt as the encoder's input,
    both as text_to_text feeds them; the decoder starts with ``decoder_start`` (default: BART eos, T5 pad)."""
    from tqdm.auto import tqdm

    context, eos = model.config.max_length, tokenizer.eos_id
    first = [tokenizer.bos_id] if model.bos_first and tokenizer.bos_id is not None else []
    last = [eos] if eos is not None else []
    words = [tokenizer.encode(w.strip()) for w in label_words]
    if not all(words):
        raise WarmstartError(f"a label word in {label_words} has no tokens", "use non-empty label words")
    sources, cut = [], 0
    for p in prompts:
        room = context - len(first) - len(last)
        ids, dropped = _fit(tokenizer, p, p.rstrip(" "), room, "a query", context)
        sources.append(first + ids + last)
        cut += dropped
    _warn_cut(cut, len(prompts), context)
    if decoder_start is None:
        decoder_start = tokenizer.eos_id if model.bos_first else tokenizer.pad_id
    targets = [first + w + last for w in words]
    was_training = model.training
    model.eval()
    try:
        with (
            torch.no_grad(),
            tqdm(total=len(sources), unit="seq", desc="scoring", disable=not progress) as bar,
        ):
            return _seq2seq_sums(model, sources, targets, len(first), decoder_start, batch_size, bar)
    finally:
        model.train(was_training)


def _seq2seq_sums(model, sources, targets, given: int, start: int, batch_size: int, bar) -> torch.Tensor:
    """(N, L) sums of log p(target tokens after the first ``given``) for every source and target: each
    batch of sources is encoded once and decoded with every target."""
    device = next(model.parameters(), torch.empty(0)).device

    def padded(rows):
        ids = torch.zeros(len(rows), max(map(len, rows)), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(rows):
            ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
        return ids.to(device), mask.to(device)

    k = len(targets)
    dec, dec_mask = padded([[start] + t[:-1] for t in targets])
    gold, scored = padded(targets)
    scored[:, :given] = 0
    out = torch.zeros(len(sources), k, dtype=torch.float64)
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    step = max(1, batch_size // k)
    for i in range(0, len(order), step):
        rows = order[i : i + step]
        ids, mask = padded([sources[r] for r in rows])
        memory = model.encode(ids, mask).repeat_interleave(k, 0)
        b = len(rows)
        hidden, _ = model.decode(
            dec.repeat(b, 1), memory, mask.repeat_interleave(k, 0), None, dec_mask.repeat(b, 1)
        )
        logp = model.lm_logits(hidden).float().log_softmax(-1)
        logp = logp.gather(-1, gold.repeat(b, 1)[..., None])[..., 0]
        out[rows] = (logp * scored.repeat(b, 1)).sum(-1).view(b, k).double().cpu()
        bar.update(b)
    return out


def draw_demonstrations(by_label: dict[str, list[dict]], k: int, rng: random.Random) -> list[dict]:
    """k records, as balanced over the labels as their pools allow (labels take turns), in random order."""
    names = sorted(by_label)
    rng.shuffle(names)
    pools = {n: rng.sample(by_label[n], min(k, len(by_label[n]))) for n in names}
    picked: list[dict] = []
    while len(picked) < k:
        picked += [pools[n].pop() for n in names if pools[n]][: k - len(picked)]
    rng.shuffle(picked)
    return picked


def _spread(xs: list[float]) -> dict:
    return {"mean": statistics.fmean(xs), "std": statistics.stdev(xs) if len(xs) > 1 else 0.0, "per_seed": xs}


def evaluate_prompting(run_dir, dataset: str, cfg: PromptConfig, split: str = "test", out=None,
                       options=None, progress: bool = True) -> dict:  # fmt: skip
    """Accuracy per k (mean and std over the demonstration draws), the majority-class baseline and the label
    prior; writes prompting.json and prompting.png into ``out`` (default RUN/prompting-DATASET)."""

    if out and Path(out).exists() and not Path(out).is_dir():  # refused before the scoring, not after
        raise WarmstartError(f"--out {out} is a file; prompting writes a directory", "choose another --out")
    data = open_dataset(dataset, options or DataOptions())
    if data.kind != "labeled":
        raise WarmstartError(f"{dataset} has no labels", "use a labeled dataset (`warmstart data list`)")
    train, pool = list(data.records("train")), list(data.records(split))
    if not pool:
        raise WarmstartError(f"the {split} split of {dataset} is empty", "pick another split or dataset")
    labels = sorted({str(r["label"]) for r in train + pool})
    words = cfg.label_words or {n: n for n in labels}
    missing = [n for n in labels if n not in words]
    if missing:
        raise WarmstartError(f"label_words has no word for the label '{missing[0]}' of {dataset}",
                             f"give every label a word: {', '.join(labels)}")  # fmt: skip
    if len({words[n] for n in labels}) < len(labels):
        raise WarmstartError(f"two labels share a word in {words}", "give each label its own word")
    if max(cfg.shots) > len(train):
        raise WarmstartError(f"k={max(cfg.shots)} demonstrations, but the train split of {dataset} has "
                             f"{len(train)} examples", f"use shots of at most {len(train)}")  # fmt: skip
    examples = random.Random(0).sample(pool, min(cfg.max_examples, len(pool)))
    gold = torch.tensor([labels.index(str(r["label"])) for r in examples])
    counts = Counter(str(r["label"]) for r in train)
    majority = max(labels, key=lambda n: counts[n])
    by_label = {n: [r for r in train if str(r["label"]) == n] for n in labels if counts[n]}
    runs = [(k, s) for k in cfg.shots for s in range(cfg.seeds if k else 1)]
    demos = {(k, s): draw_demonstrations(by_label, k, random.Random(f"{k}-{s}")) for k, s in runs}
    queries = [r["text"] for r in examples] + (["N/A"] if cfg.calibrate else [])
    prompts = [build_prompt(demos[run], q, cfg) for run in runs for q in queries]
    model, tokenizer, config_json = load_generator(run_dir)
    model.to("cuda" if torch.cuda.is_available() else "cpu")
    start = config_json.get("decoder_start_token_id")
    scores = label_scores(
        model, tokenizer, prompts, [words[n] for n in labels], cfg.batch_size, progress, start
    )
    accs = defaultdict(lambda: defaultdict(list))
    for (k, _), block in zip(runs, scores.split(len(queries))):
        accs[k]["accuracy"].append(float((block[: len(examples)].argmax(1) == gold).double().mean()))
        if cfg.calibrate:
            calibrated = (block[:-1] - block[-1]).argmax(1)
            accs[k]["calibrated"].append(float((calibrated == gold).double().mean()))
    results = [{"k": k, **{m: _spread(v) for m, v in accs[k].items()}} for k in cfg.shots]
    slug = re.sub(r"[^\w.-]+", "-", Path(dataset).stem)
    out = Path(out) if out else Path(run_dir) / f"prompting-{slug}"
    out.mkdir(parents=True, exist_ok=True)
    baseline = float((gold == labels.index(majority)).double().mean())
    result = {"run": str(run_dir), "dataset": dataset, "split": split, "examples": len(examples),
              "config": asdict(cfg), "label_words": {n: words[n] for n in labels},
              "prior": {n: counts[n] / len(train) for n in labels},
              "majority": {"label": majority, "accuracy": baseline},
              "results": results, "example_prompt": str(prompts[-len(queries)]), "out": str(out)}  # fmt: skip
    write_json(result, out / "prompting.json")
    ks = [r["k"] for r in results]
    series = {"prompting (mean over draws)": (ks, [r["accuracy"]["mean"] for r in results])}
    if cfg.calibrate:
        series["calibrated"] = (ks, [r["calibrated"]["mean"] for r in results])
    series["majority class"] = (ks, [baseline] * len(ks))
    title = f"Few-shot prompting on {dataset} ({split}, {len(examples)} examples)"
    from warmstart.report.plots import line_plot  # matplotlib: not at the command line's start-up

    result["plot"] = str(line_plot(series, title, "demonstrations k", "accuracy", out / "prompting.png"))
    return result


def format_table(result: dict) -> str:
    """k | accuracy mean ± std | majority (| calibrated), in Markdown."""
    cal, maj = any("calibrated" in r for r in result["results"]), result["majority"]["accuracy"]
    lines = ["| k | accuracy (mean ± std) | majority |" + (" calibrated |" if cal else "")]
    lines.append("|---|---|---|" + ("---|" if cal else ""))
    for r in result["results"]:
        a, n = r["accuracy"], len(r["accuracy"]["per_seed"])
        row = f"| {r['k']} | {a['mean']:.4f} ± {a['std']:.4f} ({n} draw{'s' * (n > 1)}) | {maj:.4f} |"
        if cal:
            row += f" {r['calibrated']['mean']:.4f} ± {r['calibrated']['std']:.4f} |"
        lines.append(row)
    return "\n".join(lines)
