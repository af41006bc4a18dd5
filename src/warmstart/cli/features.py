"""`warmstart embed`, `warmstart fill-mask` (and its gender template probe, --bias) and `warmstart probe`:
what a pretrained model holds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from warmstart.atomic import check_writable, write_atomic
from warmstart.cli.common import add_text_options, data_flag, data_options, open_input
from warmstart.errors import WarmstartError
from warmstart.paths import refuse_same_file

POOLING = {"default": "cls", "choices": ["cls", "mean"], "help": "[CLS] state or mean"}
MAX_LENGTH = {"type": int, "default": 128, "help": "longer texts are truncated"}
PLOT_TYPES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")  # what matplotlib writes, as a file name says


def _embed(a):
    import numpy as np

    from warmstart.data.catalog import open_dataset
    from warmstart.inference.encode import sentence_vectors
    from warmstart.inference.load import SavedModel

    refuse_same_file(a.out, {"--data": a.data})
    check_writable(a.out)
    if a.plot and Path(a.plot).suffix.lower() not in PLOT_TYPES:  # before the vectors are written
        raise WarmstartError(
            f"--plot {a.plot} is not the name of a picture file",
            f"end it in {', '.join(PLOT_TYPES)}, e.g. --plot {Path(a.plot).with_suffix('.png').name}",
        )
    if a.word is not None:
        if a.text_pair_column:
            raise WarmstartError("--text-pair-column goes without --word", "drop one of them")
        if not a.word.strip():
            raise WarmstartError("--word is empty", "pass the word whose senses to embed, e.g. --word bank")
        return _embed_word(a)
    if a.sense or a.plot is not None:
        raise WarmstartError("--sense and --plot go with --word", "add --word WORD, or drop them")
    saved = SavedModel(a.run, prefer="final")
    encoder, tokenizer, _ = saved.encoder
    records = list(open_dataset(a.data, data_options(a)).records(a.split))
    if not records:
        raise WarmstartError(f"no texts in the {a.split} split of {a.data}", "pick another split or file")
    texts = [r["text"] for r in records]
    pairs = [r["text_pair"] for r in records] if a.text_pair_column else None
    vectors, pooling, normalize = sentence_vectors(
        encoder, tokenizer, saved.card, texts, a.layer, a.pooling, a.normalize, a.max_length, progress=True,
        pairs=pairs,
    )  # fmt: skip
    out = Path(a.out)
    write_atomic(out, lambda fh: np.save(fh, vectors))  # the file appears whole, or the old one stays
    how = f"{a.layer}, {pooling}{', unit length' if normalize else ''}"
    print(f"{vectors.shape[0]:,} x {vectors.shape[1]} features ({how}) written to {out}")


def _embed_word(a):
    from warmstart.commands.word_senses import embed_word

    result = embed_word(
        a.run, a.data, a.word, a.sense or [], a.out, layer=a.layer, split=a.split, limit=a.limit,
        plot=a.plot, static=a.vectors, options=data_options(a),
    )  # fmt: skip
    counts = ", ".join(f"{k} {v}" for k, v in result["senses"].items())
    print(f"{result['count']} sentences with '{a.word}' in {a.data} ({counts}), layer {a.layer}")
    if "separation" in result:
        sep = result["separation"]
        print(
            f"senses told apart: {sep['accuracy']:.2f} (leave-one-out nearest centroid; one static vector "
            f"for every sentence: {sep['chance']:.2f})"
        )
    print(f"vectors: {result['vectors']}, sentences: {result['sentences']}" + (
        f", plot: {result['plot']}" if result.get("plot") else ""))  # fmt: skip


def _fill_mask(a):
    import json

    from warmstart.inference.fill_mask import FillMask

    if a.bias:
        return _bias_probe(a)
    if a.out:
        raise WarmstartError("--out goes with --bias", "add --bias, or drop --out")
    texts = list(a.text or [])
    if a.input:
        with sys.stdin if a.input == "-" else open_input(a.input) as fh:
            texts += [line.strip() for line in fh if line.strip()]
    if not texts:
        raise WarmstartError("no text given", 'pass "a text with [MASK]" or --input FILE (one text per line)')
    model = FillMask(a.run, random_init=a.random_init, seed=a.seed)
    for text in texts:
        result = model.fill(text, a.top_k)
        if a.json:
            print(json.dumps(result, ensure_ascii=False))
            continue
        print(text)
        for n, mask in enumerate(result["masks"], start=1):
            shown = "  ".join(f"{m['token']} {m['score']:.3f}" for m in mask)
            print(f"  {model.mask_token} {n}: {shown}")


def _bias_probe(a):
    from warmstart.analysis import gender_probe

    if a.text or a.input or a.random_init:
        raise WarmstartError("--bias takes no texts, --input or --random-init", "drop them, or drop --bias")
    out = Path(a.out) if a.out else Path(a.run) / gender_probe.FILE
    check_writable(out)
    result = gender_probe.gender_probe(a.run)
    print(gender_probe.markdown(result))
    print(f"written to {gender_probe.save(result, out)}")


def _probe(a):
    from warmstart.commands.probe import run_probe
    from warmstart.commands.probe_steps import probe_checkpoints

    if a.hans:
        return _hans(a)
    if a.entailment_label is not None:
        raise WarmstartError("--entailment-label goes with --hans", "add --hans, or drop it")
    if not a.data:
        raise WarmstartError(
            "probe needs --data, a labeled dataset", "add --data NAME_OR_FILE (or use --hans)"
        )
    result = (probe_checkpoints if a.checkpoints else run_probe)(
        a.run,
        a.data,
        a.out,
        pooling=a.pooling,
        max_length=a.max_length,
        train_limit=a.train_limit,
        scratch_twin=not a.no_scratch,
        overwrite=a.overwrite,
        options=data_options(a),
    )
    print(result["table"])
    print(f"plot: {result['plot']}")


def _hans(a):
    from warmstart.analysis import hans
    from warmstart.train.checkpoint import write_json
    from warmstart.train.rundir import check_free, open_run_dir, settle

    if a.checkpoints or a.data:
        raise WarmstartError("--hans takes a finetuned run alone", "drop --checkpoints and --data")
    check_free(a.out, a.overwrite)
    result = hans.hans_probe(a.run, a.entailment_label)
    run_dir = open_run_dir(a.out, overwrite=a.overwrite, what="probe")
    write_json(result, run_dir / hans.FILE)
    settle(run_dir)
    text = hans.markdown(result)
    (run_dir / "hans.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"written to {run_dir / hans.FILE}")


def _word_options(em) -> None:
    em.add_argument(
        "--word",
        help="one word: its contextual vector in each of up to --limit sentences of --data holding it "
        "(rows of --out; the sentences in OUT.json) instead of one vector per text",
    )
    em.add_argument(
        "--sense",
        action="append",
        metavar="NAME=CUE,CUE",
        help="with --word: a sense and cue words that mark it in a sentence (repeat; sentences are balanced)",
    )
    em.add_argument("--limit", type=int, default=40, help="with --word: the most sentences to take")
    em.add_argument(
        "--plot",
        nargs="?",
        const="",
        metavar="PNG",
        help="with --word: the vectors in 2-D by sense (default file: OUT with .png)",
    )
    em.add_argument("--vectors", help="with --plot: word2vec vectors (run or file) for the static panel")


def add_embed(sub) -> None:
    em = sub.add_parser("embed", help="hidden states of a chosen layer, pooled, to a .npy file")
    em.add_argument("run", help="run or checkpoint directory (pretrained or finetuned)")
    data_flag(em, "dataset name or file whose texts to embed")
    em.add_argument("--split", default="all", choices=["train", "validation", "test", "all"], help="split")
    em.add_argument(
        "--layer",
        default="last",
        help="last, second_to_last, sum_last4, concat_last4, average (of all layers), or an index "
        "(0 = embeddings; ELMo: the token layer)",
    )
    em.add_argument(
        "--pooling",
        choices=["cls", "mean", "max"],
        help="[CLS] state, mean or max over the tokens (default: what a sentence-transformers model declares "
        "in its modules.json, else cls)",
    )
    em.add_argument(
        "--normalize",
        action=argparse.BooleanOptionalAction,
        help="scale each vector to length 1 (default: as the model declares; all-MiniLM-L6-v2 does)",
    )
    em.add_argument("--max-length", **MAX_LENGTH)
    em.add_argument("--out", required=True, help="output .npy file (rows in the order of the texts)")
    em.add_argument(
        "--text-pair-column",
        help="column with each row's second text: the pair encoded as the model's pair input (segment B, "
        "as finetuning on pairs reads it), one vector per row",
    )
    _word_options(em)
    add_text_options(em)
    em.set_defaults(func=_embed)


def add_fill_mask(sub) -> None:
    fm = sub.add_parser("fill-mask", help="the top-k tokens for each [MASK] of a text (a masked-LM run)")
    fm.add_argument("run", help="run or checkpoint directory pretrained with mlm, mlm+nsp or mlm+sop")
    fm.add_argument(
        "text", nargs="*", help='texts with one or more masks, e.g. "Paris is the [MASK] of France."'
    )
    fm.add_argument(
        "--input", metavar="FILE", help="also read texts from this file, one per line (- for stdin)"
    )
    fm.add_argument("--top-k", type=int, default=5, help="tokens shown per mask")
    fm.add_argument("--json", action="store_true", help='one JSON object per text: {"text", "masks"}')
    fm.add_argument(
        "--random-init", action="store_true", help="the run's random twin (untrained weights): a baseline"
    )
    fm.add_argument("--seed", type=int, default=0, help="seed of the random twin's weights")
    fm.add_argument(
        "--bias",
        action="store_true",
        help="instead of texts: the gender template probe, P(he) vs P(she) and P(man) vs P(woman) in "
        "occupation templates, per occupation, with its limits (RUN/bias_probe.json; `warmstart report` "
        "shows it)",
    )
    fm.add_argument("--out", help="with --bias: write the JSON here instead of RUN/bias_probe.json")
    fm.set_defaults(func=_fill_mask)


def add_probe(sub) -> None:
    pb = sub.add_parser("probe", help="a linear probe on every layer, with a plot of score by layer")
    pb.add_argument("run", help="run or checkpoint directory (pretrained)")
    pb.add_argument(
        "--checkpoints",
        action="store_true",
        help="RUN is a pretraining run: probe each of its saved checkpoints (and the random init, step 0) "
        "and set the score against the step and the validation loss (probe.md, probe.png)",
    )
    pb.add_argument(
        "--hans",
        action="store_true",
        help="RUN is a finetuned pair classifier (NLI): its accuracy on HANS-style template pairs, per "
        "heuristic (lexical overlap, subsequence, constituent), entailed and not (hans.md, hans.json)",
    )
    pb.add_argument(
        "--entailment-label", help="with --hans: the model's label that means entailed (default: entailment)"
    )
    data_flag(pb, "labeled dataset name or file (not with --hans)", required=False)
    pb.add_argument("--pooling", **POOLING)
    pb.add_argument("--max-length", **MAX_LENGTH)
    pb.add_argument("--train-limit", type=int, default=4000, help="training examples for the probes")
    pb.add_argument("--no-scratch", action="store_true", help="skip the randomly initialised baseline")
    pb.add_argument("--out", required=True, help="output directory (probe.json, probe.md, probe.png)")
    pb.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    pb.add_argument("--label-column", default="label", help="column with the label")
    add_text_options(pb)
    pb.set_defaults(func=_probe)
