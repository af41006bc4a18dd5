"""Command line: each subcommand parses its flags and calls one function. Nothing else lives here."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from warmstart.errors import WarmstartError


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
    from warmstart.tokenization import train_tokenizer

    texts = corpus_texts(
        a.corpus,
        DataOptions(
            text_column=a.text_column, txt_mode=a.txt_mode, label_column=None, split_seed=a.split_seed
        ),
        "train",
    )
    tok = train_tokenizer(
        texts, a.kind, a.vocab_size, a.out, min_frequency=a.min_frequency, overwrite=a.overwrite
    )
    print(f"tokenizer ({a.kind}, {tok.vocab_size} tokens) written to {a.out}")


def _prepare(a):
    from pathlib import Path

    from warmstart.data.catalog import DataOptions
    from warmstart.data.corpus import prepare_corpus
    from warmstart.tokenization import Tokenizer

    opts = DataOptions(
        text_column=a.text_column, txt_mode=a.txt_mode, label_column=None, split_seed=a.split_seed
    )
    meta = prepare_corpus(a.corpus, opts, Tokenizer.load(a.tokenizer), Path(a.out), overwrite=a.overwrite)
    for split, info in meta["splits"].items():
        print(f"{split}: {info['num_tokens']:,} tokens in {info['num_docs']:,} documents")
    print(f"token shards written to {a.out}")


def _pretrain(a):
    from warmstart.pretrain import pretrain

    if a.corpus:  # KEY=VALUE overrides typed after --corpus land there: move them back
        a.overrides = a.overrides + [c for c in a.corpus if "=" in c]
        a.corpus = [c for c in a.corpus if "=" not in c]
    flags: dict = {}
    for key, dotted in [
        ("corpus", "data.corpus"),
        ("tokenizer", "data.tokenizer"),
        ("shards", "data.shards"),
        ("steps", "train.steps"),
        ("out", "out"),
        ("seq_len", "data.seq_len"),
        ("batch_size", "train.batch_size"),
        ("lr", "train.lr"),
        ("seed", "train.seed"),
    ]:
        value = getattr(a, key)
        if value is not None:
            section, _, leaf = dotted.rpartition(".")
            (flags.setdefault(section, {}) if section else flags)[leaf] = value
    result = pretrain(a.preset, a.config, flags, a.overrides, resume=a.resume, overwrite=a.overwrite)
    m = result["metrics"]
    print(
        f"done: step {result['step']}, validation loss {m.get('loss', float('nan')):.4f}, "
        f"perplexity {m.get('perplexity', float('nan')):.1f}, accuracy {m.get('accuracy', float('nan')):.3f}"
    )
    print(f"run directory: {result['run_dir']}")


def _finetune(a):
    from warmstart.tasks.classification import finetune_classification

    result = finetune_classification(
        None if a.from_scratch else a.init,
        a.dataset,
        a.out,
        epochs=a.epochs,
        lr=a.lr,
        batch_size=a.batch_size,
        max_length=a.max_length,
        seed=a.seed,
        overwrite=a.overwrite,
        scratch_like=a.init if a.from_scratch else None,
    )
    print(f"test accuracy {result['test']['accuracy']:.4f} (best validation step {result['best_step']})")
    print(f"run directory: {a.out}")


def _demo(a):
    from warmstart.demo import run_demo

    report = run_demo(a.out, quick=a.quick, overwrite=a.overwrite)
    print(f"report: {report}")


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

    from warmstart.config import help_text, preset_names
    from warmstart.pretrain import PretrainConfig

    pt = sub.add_parser("pretrain", help="pretrain a model with a self-supervised objective")
    _raw(pt, help_text(PretrainConfig) + "\n\npresets: " + ", ".join(preset_names()))
    pt.add_argument("--preset", help="model size preset, e.g. bert-mini (see the list below)")
    pt.add_argument("--config", help="YAML file of config keys")
    pt.add_argument("--corpus", nargs="+", help="corpus names or text files (data.corpus)")
    pt.add_argument("--tokenizer", help="tokenizer directory (data.tokenizer)")
    pt.add_argument("--shards", help="token shards from `warmstart prepare` (data.shards)")
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

    ft = sub.add_parser("finetune", help="finetune a pretrained run on a labeled dataset (classification)")
    ft.add_argument("--init", required=True, help="pretrained run or checkpoint directory")
    ft.add_argument("--dataset", required=True, help="labeled dataset name or file")
    ft.add_argument(
        "--from-scratch",
        action="store_true",
        help="same architecture and tokenizer as --init but random weights (the scratch twin)",
    )
    ft.add_argument("--epochs", type=int, default=3, help="passes over the training split")
    ft.add_argument(
        "--lr", type=float, default=5e-5, help="peak learning rate (warmup 10%%, then linear decay)"
    )
    ft.add_argument("--batch-size", type=int, default=32, help="examples per batch")
    ft.add_argument(
        "--max-length", type=int, default=128, help="longer inputs are truncated to this many tokens"
    )
    ft.add_argument(
        "--seed", type=int, default=0, help="seed for the head's initialisation, order and dropout"
    )
    ft.add_argument("--out", required=True, help="run directory")
    ft.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    ft.set_defaults(func=_finetune)

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
    except WarmstartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
