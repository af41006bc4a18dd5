"""`warmstart evaluate` and `warmstart predict`: a finetuned run on labeled data, or on new inputs."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from warmstart.atomic import check_writable, write_atomic
from warmstart.cli.common import (
    add_text_options,
    data_flag,
    data_options,
    head_flag,
    open_input,
    split_file_flags,
    split_files,
)
from warmstart.errors import WarmstartError
from warmstart.paths import refuse_same_file

SPLITS = ["train", "validation", "test", "all"]
RUN_HELP = "finetune run directory (its best model is used) or model directory"
RUN_COLUMN = " (default: the one the run was finetuned with)"


def _evaluate(a):
    from warmstart.inference.evaluate import evaluate_run
    from warmstart.tasks.breakdown import class_report, one_class_warning
    from warmstart.train.checkpoint import write_json

    files = split_files(a)
    if a.out:
        refuse_same_file(a.out, {"--data": a.data, **{f"--{s}-file": f for s, f in files.items()}})
        check_writable(a.out)
    options = dataclasses.replace(data_options(a), target_column=a.target_column)  # None: the run's columns
    split = a.split or "test"  # not given: the test split, said when it is carved from one file
    result = evaluate_run(a.run, a.data, split, options, files=files, head=a.head, split_given=bool(a.split))
    shown = ", ".join(f"{k} {v:.4f}" for k, v in result["metrics"].items())
    print(f"{result['dataset']} ({split}, {result['examples']:,} examples): {shown}")
    if "breakdown" in result:
        print(class_report(result["breakdown"]))
        warning = one_class_warning(result["breakdown"])
        if warning:
            print(warning, file=sys.stderr)
    if a.out:
        write_json(result, Path(a.out))
        print(f"metrics written to {a.out}")


def _predict(a):
    import json
    from collections.abc import Sized

    from warmstart.inference.predict import is_table, predict_lines, predict_table

    refuse_same_file(a.out, {"--input": a.input})
    if a.texts and a.input is not None:
        raise WarmstartError(
            f"both texts ({len(a.texts)}) and --input {a.input} given",
            "predict the texts or the file, not both",
        )
    files = [t for t in a.texts if "\n" not in t and len(t) < 4096 and Path(t).is_file()]
    if files:  # `predict RUN reviews.csv`: a file given as a text
        raise WarmstartError(
            f"{files[0]} is a file, given as a text to predict",
            f"pass --input {files[0]} to predict its rows",
        )
    total = None  # how many predictions, for the bar's time left (a file is counted only when written)
    if a.texts:
        source, preds, total = None, predict_lines(a.run, a.texts, head=a.head), len(a.texts)
    elif a.input not in (None, "-") and is_table(a.input):  # rows by column, not lines
        source, preds = None, predict_table(a.run, a.input, a.text_column, a.text_pair_column, head=a.head)
    else:
        source = sys.stdin if a.input in (None, "-") else open_input(a.input)
        preds = predict_lines(a.run, source, head=a.head)
        if source is not sys.stdin and a.out not in (None, "-"):
            total = sum(1 for line in open_input(a.input) if line.strip())
    lines = (json.dumps(pred, ensure_ascii=False) + "\n" for pred in preds)
    if a.out in (None, "-"):
        sys.stdout.writelines(lines)
        _said(source)
        return
    count = 0

    def write(fh):  # the file appears only when every prediction is in it: an error keeps the old one
        from tqdm.auto import tqdm

        nonlocal count
        shown = len(preds) if isinstance(preds, Sized) else total
        for line in tqdm(lines, total=shown, desc="predicting", unit="example", leave=False):
            fh.write(line)
            count += 1

    write_atomic(a.out, write, text=True)
    _said(source)
    print(f"{count:,} predictions written to {a.out}", file=sys.stderr)


def _said(source) -> None:
    """A file's lines that were not UTF-8 (their bad bytes replaced) are said once, as every reader does."""
    if hasattr(source, "warn"):
        source.warn()


def add_evaluate(sub) -> None:
    ev = sub.add_parser("evaluate", help="metrics of a finetuned run on a labeled dataset split")
    ev.add_argument("run", help=RUN_HELP)
    data_flag(
        ev,
        "dataset name, file or folder with the same kind of labels (optional when a --*-file flag names the "
        "split evaluated)",
        required=False,
    )
    split_file_flags(ev)
    ev.add_argument("--split", choices=SPLITS, help="split (default: test)")
    ev.add_argument("--label-column", help="column with the label" + RUN_COLUMN)
    ev.add_argument("--text-pair-column", help="column with the second text of a pair" + RUN_COLUMN)
    ev.add_argument("--target-column", help="text_to_text: column with the output text" + RUN_COLUMN)
    ev.add_argument("--out", help="also write the metrics to this JSON file")
    add_text_options(ev, None, RUN_COLUMN)
    head_flag(ev)
    ev.set_defaults(func=_evaluate)


def add_predict(sub) -> None:
    pd = sub.add_parser("predict", help="predictions of a finetuned run as JSON lines")
    pd.add_argument("run", help=RUN_HELP)
    pd.add_argument(
        "texts",
        nargs="*",
        metavar="TEXT",
        help="examples to predict, one an argument, as lines of --input are",
    )
    pd.add_argument(
        "--input",
        help="file with one example per line (text, or a JSON object), or a CSV, TSV or Parquet file read by "
        "column; default: stdin",
    )
    pd.add_argument("--text-column", help="a table's text column" + RUN_COLUMN)
    pd.add_argument("--text-pair-column", help="a table's column with a pair's second text" + RUN_COLUMN)
    pd.add_argument("--out", help="JSONL output file; default: stdout")
    head_flag(pd)
    pd.set_defaults(func=_predict)
