"""Command line: each subcommand parses its flags and calls one function. Nothing else lives here."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

from warmstart.atomic import check_writable, disk_full, disk_full_error, write_atomic
from warmstart.errors import WarmstartError
from warmstart.train.signals import Stopped


def _raw(p: argparse.ArgumentParser, text: str) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = text


def _data_list(a):
    from warmstart.data.catalog import list_table

    print(list_table())


def _data_show(a):
    from warmstart.data.catalog import DataOptions, show

    opts = DataOptions(
        text_column=a.text_column,
        label_column=a.label_column,
        text_pair_column=a.text_pair_column,
        txt_mode=a.txt_mode,
        split_seed=a.split_seed,
    )
    print(show(a.name, opts, n_examples=a.examples))


def _tokenizer_train(a):
    from warmstart.data.catalog import DataOptions
    from warmstart.data.corpus import corpus_texts
    from warmstart.tokenization.train import train_tokenizer

    texts = corpus_texts(
        a.corpus,
        DataOptions(
            text_column=a.text_column, txt_mode=a.txt_mode, label_column=None, split_seed=a.split_seed
        ),
        "train",
    )
    sentinels = a.sentinels if a.sentinels is not None else (100 if a.kind == "unigram" else 0)
    tok = train_tokenizer(
        texts,
        a.kind,
        a.vocab_size,
        a.out,
        min_frequency=a.min_frequency,
        overwrite=a.overwrite,
        sentinels=sentinels,
    )
    extra = f", {sentinels} of them sentinels <extra_id_N>" if sentinels else ""
    print(f"tokenizer ({a.kind}, {tok.vocab_size} tokens{extra}) written to {a.out}")


def _prepare(a):
    from pathlib import Path

    from warmstart.data.catalog import DataOptions
    from warmstart.data.corpus import prepare_corpus
    from warmstart.tokenization.tokenizer import Tokenizer

    opts = DataOptions(
        text_column=a.text_column, txt_mode=a.txt_mode, label_column=None, split_seed=a.split_seed
    )
    meta = prepare_corpus(a.corpus, opts, Tokenizer.load(a.tokenizer), Path(a.out), overwrite=a.overwrite)
    for split, info in meta["splits"].items():
        print(f"{split}: {info['num_tokens']:,} tokens in {info['num_docs']:,} documents")
    print(f"token shards written to {a.out}")


def _flags(a, table: list[tuple[str, str]]) -> dict:
    """Nested config dict from the flags that were given: [(attribute, dotted key)]."""
    flags: dict = {}
    for key, dotted in table:
        value = getattr(a, key)
        if value is not None and value is not False:
            node = flags
            *sections, leaf = dotted.split(".")
            for section in sections:
                node = node.setdefault(section, {})
            node[leaf] = value
    return flags


def _pretrain(a):
    from warmstart.commands.pretrain import pretrain

    if a.corpus:  # KEY=VALUE overrides typed after --corpus land there: move them back
        a.overrides = a.overrides + [c for c in a.corpus if "=" in c]
        a.corpus = [c for c in a.corpus if "=" not in c]
    flags = _flags(
        a,
        [
            ("corpus", "data.corpus"),
            ("tokenizer", "data.tokenizer"),
            ("shards", "data.shards"),
            ("init", "init"),
            ("arch", "arch"),
            ("objective", "objective"),
            ("steps", "train.steps"),
            ("out", "out"),
            ("seq_len", "data.seq_len"),
            ("batch_size", "train.batch_size"),
            ("lr", "train.lr"),
            ("seed", "train.seed"),
        ],
    )
    result = pretrain(a.preset, a.config, flags, a.overrides, resume=a.resume, overwrite=a.overwrite)
    m = result["metrics"]
    # every validation metric of the objective (ELECTRA adds rtd_*, NSP/SOP sentence_*)
    print(f"done: step {result['step']}, validation " + ", ".join(f"{k} {v:.4g}" for k, v in m.items()))
    print(f"run directory: {result['run_dir']}")


FINETUNE_FLAGS = [
    ("init", "init"),
    ("dataset", "data.dataset"),
    ("task", "task.name"),
    ("from_scratch", "from_scratch"),
    ("epochs", "epochs"),
    ("lr", "train.lr"),
    ("batch_size", "train.batch_size"),
    ("max_length", "task.max_length"),
    ("seeds", "seeds"),
    ("strategy", "strategy.strategy"),
    ("text_column", "data.text_column"),
    ("text_pair_column", "data.text_pair_column"),
    ("label_column", "data.label_column"),
    ("out", "out"),
]


def _finetune(a):
    from warmstart.commands.finetune import finetune

    result = finetune(
        a.config, _flags(a, FINETUNE_FLAGS), a.overrides, resume=a.resume, overwrite=a.overwrite
    )
    for seed, run in result["runs"].items():
        test = run["test_metrics"]["test"]
        shown = ", ".join(f"{k} {v:.4f}" for k, v in test.items() if k != "loss")
        print(f"seed {seed}: test {shown} (best validation step {run['test_metrics']['best_step']})")
    if "summary" in result:
        for name, m in result["summary"]["metrics"].items():
            print(f"{name}: mean {m['mean']:.4f}, median {m['median']:.4f}, std {m['std']:.4f}")
    print(f"run directory: {result['run_dir']}")
    from warmstart.tasks.breakdown import one_class_warning

    for seed, run in result["runs"].items():
        warning = one_class_warning(run["test_metrics"].get("breakdown"))
        if warning:
            print(warning + (f" (seed {seed})" if len(result["runs"]) > 1 else ""))


def _data_options(a) -> object:
    from warmstart.data.catalog import DataOptions

    return DataOptions(
        text_column=a.text_column,
        text_pair_column=getattr(a, "text_pair_column", None),
        label_column=getattr(a, "label_column", "label"),
        split_seed=a.split_seed,
    )


def _evaluate(a):
    from warmstart.checkpoints.predict import evaluate_run
    from warmstart.train.checkpoint import write_json

    if a.out:
        check_writable(a.out)
    result = evaluate_run(a.run, a.data, a.split, _data_options(a))
    shown = ", ".join(f"{k} {v:.4f}" for k, v in result["metrics"].items())
    print(f"{a.data} ({a.split}, {result['examples']:,} examples): {shown}")
    if a.out:
        write_json(result, Path(a.out))
        print(f"metrics written to {a.out}")


def _predict(a):
    import json

    from warmstart.checkpoints.predict import predict_lines

    source = sys.stdin if a.input in (None, "-") else _open_input(a.input)
    lines = (json.dumps(pred, ensure_ascii=False) + "\n" for pred in predict_lines(a.run, source))
    try:
        if a.out in (None, "-"):
            sys.stdout.writelines(lines)
            return
        count = 0

        def write(fh):  # the file appears only when every prediction is in it: an error keeps the old one
            nonlocal count
            for line in lines:
                fh.write(line)
                count += 1

        write_atomic(a.out, write, text=True)
        print(f"{count:,} predictions written to {a.out}", file=sys.stderr)
    finally:
        if source is not sys.stdin:
            source.close()


def _open_input(path: str):
    from warmstart.data.readers import check_text

    if not Path(path).is_file():
        raise WarmstartError(f"no such input file: {path}", "pass an existing file, or - for stdin")
    check_text(Path(path))
    return open(path, encoding="utf-8", errors="replace")


def _embed(a):
    import numpy as np

    from warmstart.checkpoints.features import embed
    from warmstart.checkpoints.load import load_encoder
    from warmstart.data.catalog import open_dataset

    check_writable(a.out)
    if a.word:
        return _embed_word(a)
    if a.sense or a.plot is not None:
        raise WarmstartError("--sense and --plot go with --word", "add --word WORD, or drop them")
    encoder, tokenizer, _ = load_encoder(a.run)
    texts = list(open_dataset(a.data, _data_options(a)).texts(a.split))
    if not texts:
        raise WarmstartError(f"no texts in the {a.split} split of {a.data}", "pick another split or file")
    vectors = embed(encoder, tokenizer, texts, a.layer, a.pooling, a.max_length)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, vectors)
    print(f"{vectors.shape[0]:,} x {vectors.shape[1]} features ({a.layer}, {a.pooling}) written to {out}")


def _embed_word(a):
    from warmstart.commands.word_senses import embed_word

    result = embed_word(
        a.run, a.data, a.word, a.sense or [], a.out, layer=a.layer, split=a.split, limit=a.limit,
        plot=a.plot, static=a.vectors, options=_data_options(a),
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

    from warmstart.checkpoints.fill_mask import FillMask

    texts = list(a.text or [])
    if a.input:
        with sys.stdin if a.input == "-" else _open_input(a.input) as fh:
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


def _probe(a):
    from warmstart.commands.probe import run_probe

    result = run_probe(
        a.run,
        a.data,
        a.out,
        pooling=a.pooling,
        max_length=a.max_length,
        train_limit=a.train_limit,
        scratch_twin=not a.no_scratch,
        overwrite=a.overwrite,
        options=_data_options(a),
    )
    print(result["table"])
    print(f"plot: {result['plot']}")


def _data_build(a):
    from warmstart.data.ner_silver import build_ner_silver

    path = build_ner_silver(limit=a.limit, overwrite=a.overwrite)
    print(f"{a.name} written to {path}")


def _demo(a):
    from warmstart.commands.demo import run_demo

    report = run_demo(a.out, quick=a.quick, overwrite=a.overwrite)
    print(f"report: {report}")


def _import(a):
    from warmstart.hub.convert import import_hf

    out = import_hf(a.src, a.out, overwrite=a.overwrite, generator=a.generator)
    print(f"imported {a.src} into {out} (use it with --init)")


def _export(a):
    from warmstart.hub.convert import export_hf

    out = export_hf(a.run, a.out, overwrite=a.overwrite)
    print(f"exported {a.run} to {out} (transformers: AutoModel*.from_pretrained({str(out)!r}))")


GENERATE_FLAGS = [
    ("max_new_tokens", "max_new_tokens"),
    ("max_length", "max_length"),
    ("strategy", "strategy"),
    ("temperature", "temperature"),
    ("top_k", "top_k"),
    ("top_p", "top_p"),
    ("num_beams", "num_beams"),
    ("length_penalty", "length_penalty"),
    ("seed", "seed"),
]


def _generate(a):
    from warmstart import config as C
    from warmstart.checkpoints.generate import run_generate
    from warmstart.generation.decode import GenerationConfig

    explicit = C.load_yaml(a.config) if a.config else {}
    explicit = C.merge(explicit, _flags(a, GENERATE_FLAGS))
    if a.no_cache:
        explicit["use_cache"] = False
    for o in a.overrides:
        explicit = C.merge(explicit, C.parse_override(o))
    cfg = C.from_dict(GenerationConfig, explicit)
    prompts = list(a.prompt or [])
    if a.file:
        with sys.stdin if a.file == "-" else _open_input(a.file) as fh:
            prompts += [line for line in fh.read().splitlines() if line.strip()]
    run_generate(a.run, prompts, cfg, show_special=a.show_special)


def _prompt(a):
    from warmstart import config as C
    from warmstart.commands.prompt import PromptConfig, evaluate_prompting, format_table

    explicit = C.load_yaml(a.config) if a.config else {}
    explicit = C.merge(
        explicit, _flags(a, [("shots", "shots"), ("seeds", "seeds"), ("max_examples", "max_examples")])
    )
    if a.template:  # typed on one line: a literal \n is a newline
        explicit["template"] = a.template.replace("\\n", "\n")
    for o in a.overrides:
        explicit = C.merge(explicit, C.parse_override(o))
    cfg = C.from_dict(PromptConfig, explicit)
    result = evaluate_prompting(a.run, a.dataset, cfg, a.split, out=a.out, options=_data_options(a))
    print(f"{a.dataset} ({a.split}, {result['examples']:,} examples), label words {result['label_words']}")
    print(format_table(result))
    print(f"results: {result['out']}/prompting.json, plot: {result['plot']}")


def _add_text_options(p):
    p.add_argument(
        "--text-column", default="text", help="column with the text in csv/tsv/jsonl/parquet files"
    )
    p.add_argument(
        "--txt-mode",
        default="line",
        choices=["line", "blank"],
        help=".txt files: one document per line, or blank-line separated documents",
    )
    p.add_argument("--split-seed", type=int, default=0, help="seed of the train/validation/test split")


def build_parser() -> argparse.ArgumentParser:
    from warmstart import __version__

    parser = argparse.ArgumentParser(prog="warmstart", description="Pretrain, then finetune, and measure it.")
    parser.add_argument("--version", action="version", version=f"warmstart {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="list and inspect datasets").add_subparsers(
        dest="data_cmd", required=True
    )
    data.add_parser("list", help="named datasets").set_defaults(func=_data_list)
    show = data.add_parser("show", help="size, splits, licence and examples of a dataset or file")
    show.add_argument("name", help="a name from `warmstart data list`, a local file, or hf:NAME[:CONFIG]")
    show.add_argument("--examples", type=int, default=3, help="how many examples to print")
    show.add_argument("--label-column", default="label", help="column with the label")
    show.add_argument("--text-pair-column", default=None, help="column with the second text of a pair")
    _add_text_options(show)
    show.set_defaults(func=_data_show)
    build = data.add_parser("build", help="build a derived dataset once and cache it")
    build.add_argument("name", choices=["wiki-ner-silver"], help="the dataset to build")
    build.add_argument("--limit", type=int, default=None, help="only the first N documents (a quick look)")
    build.add_argument("--overwrite", action="store_true", help="rebuild an existing cache")
    build.set_defaults(func=_data_build)

    tok = sub.add_parser("tokenizer", help="train tokenizers").add_subparsers(dest="tok_cmd", required=True)
    tt = tok.add_parser("train", help="train a WordPiece, byte-level BPE or Unigram tokenizer")
    tt.add_argument(
        "--kind",
        default="wordpiece",
        choices=["wordpiece", "bpe", "unigram"],
        help="wordpiece (BERT), bpe (byte-level, GPT-2/RoBERTa) or unigram (T5)",
    )
    tt.add_argument("--vocab-size", type=int, default=16000, help="vocabulary size, special tokens included")
    tt.add_argument(
        "--corpus", nargs="+", required=True, help="corpus names or text files (train split used)"
    )
    tt.add_argument("--min-frequency", type=int, default=2, help="minimum count of a merge / word piece")
    tt.add_argument(
        "--sentinels",
        type=int,
        default=None,
        help="T5 sentinel tokens <extra_id_N> added after the vocabulary (default: 100 for unigram, else 0)",
    )
    tt.add_argument("--out", required=True, help="output directory (tokenizer.json + tokenizer_config.json)")
    tt.add_argument("--overwrite", action="store_true", help="replace an existing tokenizer in --out")
    _add_text_options(tt)
    tt.set_defaults(func=_tokenizer_train)

    pr = sub.add_parser("prepare", help="tokenize a corpus into memory-mapped token shards")
    pr.add_argument("--corpus", nargs="+", required=True, help="corpus names or text files")
    pr.add_argument("--tokenizer", required=True, help="tokenizer directory")
    pr.add_argument("--out", required=True, help="output directory")
    pr.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    _add_text_options(pr)
    pr.set_defaults(func=_prepare)

    from warmstart.checkpoints.build import PretrainConfig, family_help
    from warmstart.config import help_text, preset_names

    pt = sub.add_parser("pretrain", help="pretrain a model with a self-supervised objective")
    _raw(pt, help_text(PretrainConfig) + family_help() + "\n\npresets: " + ", ".join(preset_names()))
    pt.add_argument("--preset", help="model size preset, e.g. bert-mini (see the list below)")
    pt.add_argument("--config", help="YAML file of config keys")
    pt.add_argument("--corpus", nargs="+", help="corpus names or text files (data.corpus)")
    pt.add_argument("--tokenizer", help="tokenizer directory (data.tokenizer)")
    pt.add_argument("--shards", help="token shards from `warmstart prepare` (data.shards)")
    pt.add_argument(
        "--init", metavar="RUN_OR_CHECKPOINT", help="continue pretraining from these weights (init)"
    )
    pt.add_argument("--arch", help="model family: bert, gpt2, t5 or bart (arch; presets set it)")
    pt.add_argument(
        "--objective",
        help="bert: mlm, mlm+nsp, mlm+sop, electra; gpt2: clm; t5: span_corruption; bart: denoising",
    )
    pt.add_argument("--steps", type=int, help="optimizer steps (train.steps)")
    pt.add_argument("--seq-len", dest="seq_len", type=int, help="sequence length (data.seq_len)")
    pt.add_argument("--batch-size", dest="batch_size", type=int, help="micro-batch size (train.batch_size)")
    pt.add_argument("--lr", type=float, help="peak learning rate (train.lr)")
    pt.add_argument("--seed", type=int, help="random seed (train.seed)")
    pt.add_argument("--out", help="run directory (out)")
    pt.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run exactly")
    pt.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    pt.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, e.g. train.lr=3e-4")
    pt.set_defaults(func=_pretrain)

    from warmstart.commands.finetune import FinetuneConfig

    ft = sub.add_parser("finetune", help="finetune a pretrained model on a labeled task")
    _raw(ft, help_text(FinetuneConfig))
    ft.add_argument("--init", help="pretrained run or checkpoint directory (init)")
    ft.add_argument("--dataset", help="labeled dataset name or file (data.dataset)")
    ft.add_argument(
        "--task",
        help="classification, tagging, extractive_qa, multiple_choice, text_to_text or multitask (task.name)",
    )
    ft.add_argument(
        "--from-scratch",
        action="store_true",
        help="same architecture and tokenizer as --init but random weights (the scratch twin)",
    )
    ft.add_argument("--epochs", type=float, help="passes over the training split (epochs)")
    ft.add_argument("--lr", type=float, help="peak learning rate, warmup then linear decay (train.lr)")
    ft.add_argument("--batch-size", type=int, help="examples per batch (train.batch_size)")
    ft.add_argument("--max-length", type=int, help="longest input in tokens (task.max_length)")
    ft.add_argument("--seeds", help="comma-separated seeds, e.g. 1,2,3: one run each and a summary (seeds)")
    ft.add_argument("--strategy", help="full, frozen, top_k, layernorm, bitfit or lora (strategy.strategy)")
    ft.add_argument("--text-column", help="column with the text (data.text_column)")
    ft.add_argument(
        "--text-pair-column", help="column with the second text of a pair (data.text_pair_column)"
    )
    ft.add_argument("--label-column", help="column with the label (data.label_column)")
    ft.add_argument("--config", help="YAML file of config keys")
    ft.add_argument("--out", help="run directory (out)")
    ft.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run exactly")
    ft.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    ft.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, e.g. train.lr=3e-5")
    ft.set_defaults(func=_finetune)

    ev = sub.add_parser("evaluate", help="metrics of a finetuned run on a labeled dataset split")
    ev.add_argument("run", help="finetune run directory (its best model is used) or model directory")
    ev.add_argument("--data", required=True, help="dataset name or file with the same kind of labels")
    ev.add_argument("--split", default="test", choices=["train", "validation", "test", "all"], help="split")
    ev.add_argument("--label-column", default="label", help="column with the label")
    ev.add_argument("--text-pair-column", default=None, help="column with the second text of a pair")
    ev.add_argument("--out", help="also write the metrics to this JSON file")
    _add_text_options(ev)
    ev.set_defaults(func=_evaluate)

    pd = sub.add_parser("predict", help="predictions of a finetuned run as JSON lines")
    pd.add_argument("run", help="finetune run directory (its best model is used) or model directory")
    pd.add_argument("--input", help="file with one example per line (text, or a JSON object); default: stdin")
    pd.add_argument("--out", help="JSONL output file; default: stdout")
    pd.set_defaults(func=_predict)

    em = sub.add_parser("embed", help="hidden states of a chosen layer, pooled, to a .npy file")
    em.add_argument("run", help="run or checkpoint directory (pretrained or finetuned)")
    em.add_argument("--data", required=True, help="dataset name or file whose texts to embed")
    em.add_argument("--split", default="all", choices=["train", "validation", "test", "all"], help="split")
    em.add_argument(
        "--layer",
        default="last",
        help="last, second_to_last, sum_last4, concat_last4, or an index (0 = embeddings)",
    )
    em.add_argument("--pooling", default="cls", choices=["cls", "mean"], help="[CLS] state or mean")
    em.add_argument("--max-length", type=int, default=128, help="longer texts are truncated")
    em.add_argument("--out", required=True, help="output .npy file (rows in the order of the texts)")
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
    _add_text_options(em)
    em.set_defaults(func=_embed)

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
    fm.set_defaults(func=_fill_mask)

    pb = sub.add_parser("probe", help="a linear probe on every layer, with a plot of score by layer")
    pb.add_argument("run", help="run or checkpoint directory (pretrained)")
    pb.add_argument("--data", required=True, help="labeled dataset name or file")
    pb.add_argument("--pooling", default="cls", choices=["cls", "mean"], help="[CLS] state or mean")
    pb.add_argument("--max-length", type=int, default=128, help="longer texts are truncated")
    pb.add_argument("--train-limit", type=int, default=4000, help="training examples for the probes")
    pb.add_argument("--no-scratch", action="store_true", help="skip the randomly initialised baseline")
    pb.add_argument("--out", required=True, help="output directory (probe.json, probe.md, probe.png)")
    pb.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    pb.add_argument("--label-column", default="label", help="column with the label")
    _add_text_options(pb)
    pb.set_defaults(func=_probe)

    from warmstart.generation.decode import GenerationConfig

    gn = sub.add_parser("generate", help="continue text with a gpt2 run, or transform it with a t5/bart run")
    _raw(gn, help_text(GenerationConfig))
    gn.add_argument("run", help="gpt2, t5 or bart run directory (its final model) or model directory")
    gn.add_argument("--prompt", action="append", metavar="TEXT", help="a prompt (repeat for several)")
    gn.add_argument("--file", metavar="PROMPTS.txt", help="a text file with one prompt per line")
    gn.add_argument("--max-new-tokens", type=int, help="most new tokens per prompt (max_new_tokens)")
    gn.add_argument("--max-length", type=int, help="cap on prompt + new tokens, or output (max_length)")
    gn.add_argument("--strategy", help="greedy, sample or beam (strategy)")
    gn.add_argument("--temperature", type=float, help="sampling temperature (temperature)")
    gn.add_argument("--top-k", type=int, help="sample from the k most likely tokens (top_k)")
    gn.add_argument("--top-p", type=float, help="nucleus sampling probability mass (top_p)")
    gn.add_argument("--num-beams", type=int, help="beams per prompt for strategy beam (num_beams)")
    gn.add_argument("--length-penalty", type=float, help="beam score exponent of the length (length_penalty)")
    gn.add_argument("--seed", type=int, help="sampling seed (seed)")
    gn.add_argument("--no-cache", action="store_true", help="recompute every step (use_cache=false)")
    gn.add_argument("--show-special", action="store_true", help="keep special tokens (e.g. T5 sentinels)")
    gn.add_argument("--config", help="YAML file of generation keys")
    gn.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="generation options, e.g. top_p=0.9")
    gn.set_defaults(func=_generate)

    from warmstart.commands.prompt import PromptConfig

    pm = sub.add_parser("prompt", help="zero- and few-shot classification by prompting a gpt2 run")
    _raw(pm, help_text(PromptConfig))
    pm.add_argument("run", help="gpt2 run directory (its final model) or model directory")
    pm.add_argument("--dataset", required=True, help="labeled dataset name or file")
    pm.add_argument("--split", default="test", choices=["validation", "test"], help="split scored")
    pm.add_argument("--shots", help="comma-separated numbers of demonstrations, e.g. 0,1,4 (shots)")
    pm.add_argument("--seeds", type=int, help="draws of the demonstrations per k (seeds)")
    pm.add_argument("--max-examples", type=int, help="examples scored (max_examples)")
    pm.add_argument("--template", help="e.g. 'Review: {text}\\nAnswer: {label}' (template)")
    pm.add_argument("--out", help="output directory (default RUN/prompting-DATASET)")
    pm.add_argument("--config", help="YAML file of prompt keys")
    pm.add_argument("--label-column", default="label", help="column with the label")
    _add_text_options(pm)
    pm.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="prompt options, e.g. calibrate=true")
    pm.set_defaults(func=_prompt)

    im = sub.add_parser(
        "import", help="a transformers checkpoint (bert, gpt2, t5, bart) as a warmstart model"
    )
    im.add_argument("src", help="a local transformers model directory, or a hub id (needs huggingface_hub)")
    im.add_argument(
        "--out", required=True, help="the warmstart model directory to write (use it with --init)"
    )
    im.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    im.add_argument(
        "--generator",
        metavar="SRC",
        help="ELECTRA: the generator (ElectraForMaskedLM) beside the discriminator SRC, giving the whole "
        "electra run (default: SRC/generator when there is one)",
    )
    im.set_defaults(func=_import)
    ex = sub.add_parser("export", help="a warmstart run's model as a transformers directory")
    ex.add_argument("run", help="run directory (its final model) or model/checkpoint directory")
    ex.add_argument("--to", default="hf", choices=["hf"], help="format: hf (transformers from_pretrained)")
    ex.add_argument("--out", required=True, help="output directory")
    ex.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    ex.set_defaults(func=_export)

    from warmstart.cli.word2vec import add_word2vec

    add_word2vec(sub)

    from warmstart.cli.serve import add_serve

    add_serve(sub)

    from warmstart.cli.study import add_report, add_study

    add_study(sub)
    add_report(sub)

    dm = sub.add_parser("demo", help="the whole path on the embedded real data, with a report")
    dm.add_argument("--out", default="runs/demo", help="directory for the demo's runs and report")
    dm.add_argument("--quick", action="store_true", help="a tiny budget, to check that everything runs")
    dm.add_argument("--overwrite", action="store_true", help="replace an earlier demo directory")
    dm.set_defaults(func=_demo)
    return parser


def _print_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # KEY=VALUE overrides may come anywhere on the line; argparse only collects those before the options
    if hasattr(args, "overrides"):
        args.overrides = list(args.overrides) + [x for x in extra if "=" in x and not x.startswith("-")]
        extra = [x for x in extra if x not in args.overrides]
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _print_warning
            args.func(args)
        from warmstart.train.distributed import finish

        finish()  # torchrun: every rank done before any tears its process group down (a lost peer: below)
    except WarmstartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Stopped as e:  # SIGTERM/SIGINT: checkpoint written; 128 + signal number (train/signals.py)
        print(e, file=sys.stderr)
        return e.exit_code
    except OSError as e:
        if not disk_full(e):
            raise
        print(f"error: {disk_full_error(e.filename or 'a file')}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # torchrun: another process died or hung (train/distributed.py)
        from warmstart.train.distributed import failure

        lost = failure(e)
        if lost is None:
            raise
        print(f"error: {lost}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
