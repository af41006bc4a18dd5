"""`warmstart data ...`, `warmstart tokenizer train` and `warmstart prepare`: each calls one function."""

from __future__ import annotations

from pathlib import Path

from warmstart.cli.common import add_text_options, split_file_flags, split_files


def _data_list(a):
    from warmstart.data.catalog import list_table

    print(list_table())


def _data_show(a):
    from warmstart.data.catalog import show
    from warmstart.data.dataset import DataOptions

    if a.text_column is None and _columns_only(a.name, a.examples):  # a table without a `text` column
        return
    opts = DataOptions(
        text_column=a.text_column or "text",
        label_column=a.label_column,
        text_pair_column=a.text_pair_column,
        txt_mode=a.txt_mode,
        split_seed=a.split_seed,
    )
    print(show(a.name, opts, n_examples=a.examples, files=split_files(a)))


def _columns_only(name: str, examples: int) -> bool:
    """For a CSV, TSV or Parquet file with no `text` column: its columns, the ones that look like the text
    and the label, and its first rows, printed; True when it was such a file."""
    from pathlib import Path

    from warmstart.data import column_guess
    from warmstart.data.readers import file_columns, first_rows

    path = Path(name)
    if not path.is_file() or not (rows := first_rows(path)) or "text" in (columns := file_columns(path)):
        return False
    text, label = column_guess.guess(rows)
    flags = " ".join(f"--{role}-column {c}" for role, c in (("text", text), ("label", label)) if c)
    print(f"{name}: columns {', '.join(map(str, columns))}; no 'text' column, so which one is the text?")
    print(f"it looks like: warmstart data show {name} {flags}" if flags else "name it: --text-column NAME")
    for i, row in enumerate(rows[:examples], 1):
        shown = " | ".join(f"{k}: {str(v)[:60]}" for k, v in row.items())
        print(f"  {i}. {shown}")
    return True


def _data_build(a):
    from warmstart.data.ner_silver import build_ner_silver

    path = build_ner_silver(limit=a.limit, overwrite=a.overwrite)
    print(f"{a.name} written to {path}")


def _corpus_options(a):
    from warmstart.data.dataset import DataOptions

    return DataOptions(
        text_column=a.text_column, txt_mode=a.txt_mode, label_column=None, split_seed=a.split_seed
    )


def _tokenizer_train(a):
    from warmstart.data.corpus import corpus_texts
    from warmstart.paths import refuse_overlap
    from warmstart.tokenization.train import train_tokenizer

    refuse_overlap(a.out, {f"corpus {c}": c for c in a.corpus})
    texts = corpus_texts(a.corpus, _corpus_options(a), "train")
    sentinels = a.sentinels if a.sentinels is not None else (100 if a.kind == "unigram" else 0)
    tok = train_tokenizer(
        texts,
        a.kind,
        a.vocab_size,
        a.out,
        min_frequency=a.min_frequency,
        lowercase=False if a.cased else None,
        overwrite=a.overwrite,
        sentinels=sentinels,
    )
    extra = f", {sentinels} of them sentinels <extra_id_N>" if sentinels else ""
    case = "uncased" if tok.do_lower_case else "cased"
    print(f"tokenizer ({a.kind}, {case}, {tok.vocab_size} tokens{extra}) written to {a.out}")


def _tokenizer_explain(a):
    import json

    from warmstart.hub.tokenizer import find_tokenizer
    from warmstart.tokenization.explain import explain
    from warmstart.tokenization.explain_text import render

    result = explain(find_tokenizer(a.tokenizer), a.text, alternatives=a.alternatives)
    print(json.dumps(result, ensure_ascii=False, indent=1) if a.json else render(result))


def _prepare(a):
    import sys

    from warmstart.data.corpus import prepare_corpus
    from warmstart.data.dedupe import describe
    from warmstart.data.prepare_ranks import world
    from warmstart.hub.tokenizer import find_tokenizer

    tokenizer = find_tokenizer(a.tokenizer)  # a tokenizer, or a run's (TAPT: shards in the model's ids)
    meta = prepare_corpus(
        a.corpus, _corpus_options(a), tokenizer, Path(a.out), overwrite=a.overwrite,
        tokenizer_dir=a.tokenizer, counterfactual=a.counterfactual, dedupe=a.dedupe, among_processes=True,
    )  # fmt: skip
    if world()[0] != 0:  # torchrun: process 0 speaks for all
        return
    if "dedupe" in meta:
        print(describe(meta["dedupe"]), file=sys.stderr)
    for split, info in meta["splits"].items():
        print(f"{split}: {info['num_tokens']:,} tokens in {info['num_docs']:,} documents")
    print(f"token shards written to {a.out}")


def add_data(sub) -> None:
    data = sub.add_parser("data", help="list and inspect datasets").add_subparsers(
        dest="data_cmd", required=True
    )
    data.add_parser("list", help="named datasets").set_defaults(func=_data_list)
    show = data.add_parser("show", help="size, splits, licence and examples of a dataset or file")
    show.add_argument(
        "name", nargs="?", default="",
        help="a name from `warmstart data list`, a local file or folder, or hf:NAME[:CONFIG]",
    )  # fmt: skip
    split_file_flags(show)
    show.add_argument("--examples", type=int, default=3, help="how many examples to print")
    show.add_argument("--label-column", default="label", help="column with the label")
    show.add_argument("--text-pair-column", default=None, help="column with the second text of a pair")
    add_text_options(show, text_default=None, text_help=" (default: text; a table without it is listed)")
    show.set_defaults(func=_data_show)
    build = data.add_parser("build", help="build a derived dataset once and cache it")
    build.add_argument("name", choices=["wiki-ner-silver"], help="the dataset to build")
    build.add_argument("--limit", type=int, default=None, help="only the first N documents (a quick look)")
    build.add_argument("--overwrite", action="store_true", help="rebuild an existing cache")
    build.set_defaults(func=_data_build)


def add_tokenizer(sub) -> None:
    tok = sub.add_parser("tokenizer", help="train tokenizers and show how they cut words").add_subparsers(
        dest="tok_cmd", required=True
    )
    tt = tok.add_parser("train", help="train a WordPiece, byte-level BPE, Unigram or whole-word tokenizer")
    tt.add_argument(
        "--kind",
        default="wordpiece",
        choices=["wordpiece", "bpe", "unigram", "word"],
        help="wordpiece (BERT), bpe (byte-level, GPT-2/RoBERTa), unigram (T5) or word (whole words: ELMo)",
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
    tt.add_argument(
        "--cased",
        action="store_true",
        help="keep case and accents (BERT cased); wordpiece lowercases without it, the other kinds keep case",
    )
    tt.add_argument("--out", required=True, help="output directory (tokenizer.json + tokenizer_config.json)")
    tt.add_argument("--overwrite", action="store_true", help="replace an existing tokenizer in --out")
    add_text_options(tt)
    tt.set_defaults(func=_tokenizer_train)
    te = tok.add_parser(
        "explain",
        help="each word's pieces and how they were made: BPE merges by rank, WordPiece's greedy matches, "
        "Unigram's Viterbi scores",
    )
    te.add_argument(
        "tokenizer",
        help="a tokenizer.json, or a directory holding one (tokenizer train's --out, a run, a checkpoint), "
        "or a transformers directory (vocab.txt, vocab.json + merges.txt, GPT-2's encoder.json + vocab.bpe)",
    )
    te.add_argument("text", help="the text to explain (quote it)")
    te.add_argument("--json", action="store_true", help="print the steps as JSON instead of text")
    te.add_argument(
        "--alternatives", type=int, default=2, help="Unigram: how many next-best segmentations to show"
    )
    te.set_defaults(func=_tokenizer_explain)


def add_prepare(sub) -> None:
    pr = sub.add_parser(
        "prepare",
        help="tokenize a corpus into memory-mapped token shards (under torchrun the processes share the work "
        "and write one shard set: the output on a filesystem all machines see)",
    )
    pr.add_argument("--corpus", nargs="+", required=True, help="corpus names or text files")
    pr.add_argument(
        "--tokenizer",
        required=True,
        help="tokenizer directory or file, or a run or model directory (its tokenizer)",
    )
    pr.add_argument("--out", required=True, help="output directory")
    pr.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    pr.add_argument(
        "--dedupe",
        action="store_true",
        help="drop exact duplicate documents (same stripped text, by hash); a held-out copy of a training "
        "document is dropped from the held-out split; the count is said and kept in meta.json",
    )
    pr.add_argument(
        "--counterfactual",
        action="store_true",
        help="follow each training document with its gender-swapped copy (he<->she, man<->woman, ...; "
        "counterfactual data augmentation); validation and test stay as they are",
    )
    add_text_options(pr)
    pr.set_defaults(func=_prepare)
