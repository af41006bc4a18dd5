"""`warmstart study`, `warmstart report` and `warmstart demo`: each parses flags, calls one function."""

from __future__ import annotations

import json

from warmstart.cli.common import config_rows, data_flag, split_file_flags, split_files
from warmstart.data.options import COLUMNS as DATA_COLUMNS
from warmstart.data.options import FinetuneDataConfig

COLUMNS = tuple(c for c in DATA_COLUMNS if c != "target_column")  # a study classifies or tags: no target
COLUMN_ROWS = config_rows(FinetuneDataConfig)


def _study(a):
    from warmstart.commands.study import run_study
    from warmstart.study.spec import StudySpec, parse_fractions, parse_seeds

    # own split files reach every cell as the finetune keys data.*_file (quoted: a path is text, not YAML)
    files = [f"data.{split}_file={json.dumps(path)}" for split, path in split_files(a).items()]
    files += [f"data.{c}={json.dumps(getattr(a, c))}" for c in COLUMNS if getattr(a, c) is not None]
    spec = StudySpec(
        run=a.run,
        dataset=a.data or "",
        fractions=parse_fractions(a.fractions),
        seeds=parse_seeds(a.seeds),
        full_seeds=parse_seeds(a.full_seeds) if a.full_seeds else None,
        max_evals=a.max_evals,
        epochs=a.epochs,
        min_steps=a.min_steps,
        overrides=[*a.overrides, *files],
        stability=a.stability,
        long_epochs=a.long_epochs,
        reinit=a.reinit,
    )
    study = run_study(
        spec, a.out, overwrite=a.overwrite, keep_models=a.keep_models, report=not a.no_report, jobs=a.jobs
    )
    metric = study["metric"]
    for row in study["table"]:
        m = row[metric]
        print(
            f"{row['model']:<10} {row['fraction']:>6.0%} ({row['train_examples']:,} examples): {metric} "
            f"median {m['median']:.4f} [{m['min']:.4f}, {m['max']:.4f}]"
            + (f", failed {row['failed']} of {len(row['seeds'])}" if "failed" in row else "")
        )
    print(f"study: {a.out}/study.json" + (f", report: {study['report']}" if "report" in study else ""))


def _report(a):
    from warmstart.report.build import write_report

    out = write_report(a.target, a.out)
    print(f"report: {out} (and {out.with_suffix('.md')})")


def _demo(a):
    from warmstart.commands.demo import run_demo

    report = run_demo(a.out, quick=a.quick, overwrite=a.overwrite, all_labels=a.all_labels)
    print(f"report: {report}")


def add_study(sub) -> None:
    st = sub.add_parser(
        "study",
        help="what pretraining bought: pretrained vs scratch twin vs a baseline, by label fraction and seed",
        description="Finetune the pretrained model of RUN and its randomly initialised twin, and fit a "
        "classic baseline, on nested label fractions of the training split, once per seed. Resumable: rerun "
        "the same command to finish an interrupted study. Single-label classification of labeled text "
        "(rotten-tomatoes, wiki-topics, csv/jsonl files with text,label; baseline TF-IDF + logistic "
        "regression) and tagging (brown-pos, CoNLL files; baseline: each word's most frequent tag).",
    )
    st.add_argument("run", help="a `warmstart pretrain` run, or a model directory (e.g. `warmstart import`)")
    data_flag(
        st,
        "labeled dataset name, file or folder (e.g. rotten-tomatoes; optional with --train-file)",
        required=False,
    )
    split_file_flags(st)
    for column in COLUMNS:  # as finetune's flags, with its help
        flag = "--" + column.replace("_", "-")
        st.add_argument(flag, help=f"{COLUMN_ROWS[column][2]} ({flag} of finetune; data.{column})")
    st.add_argument("--out", required=True, help="study directory (cells/, study.json, report.html)")
    st.add_argument("--fractions", default="0.01,0.1,1", help="label fractions in (0, 1], comma-separated")
    st.add_argument("--seeds", default="1,2,3", help="seeds, comma-separated (one cell each)")
    st.add_argument(
        "--full-seeds", help="seeds at fraction 1 (default: --seeds); the costliest cells vary least"
    )
    st.add_argument("--epochs", type=float, default=3.0, help="passes over each fraction's training subset")
    st.add_argument(
        "--min-steps", type=int, default=100, help="at least this many steps per cell (small fractions)"
    )
    st.add_argument(
        "--max-evals", type=int, default=20, help="validation evaluations per cell, at most about this many"
    )
    st.add_argument(
        "--stability",
        action="store_true",
        help="BERT's unstable finetuning: the pretrained model in 8 arms, Adam with/without bias "
        "correction x --epochs/--long-epochs x re-init top 0/--reinit layers, each over --seeds (Mosbach "
        "et al. 2021)",
    )
    st.add_argument("--long-epochs", type=float, default=10.0, help="--stability: the longer training")
    st.add_argument("--reinit", type=int, default=2, help="--stability: top layers re-initialised")
    st.add_argument("--keep-models", action="store_true", help="keep each cell's weights (large)")
    st.add_argument(
        "--jobs", type=int, default=1, help="finetuning cells run side by side, the cores split between them"
    )
    st.add_argument("--no-report", action="store_true", help="do not write report.html at the end")
    st.add_argument("--overwrite", action="store_true", help="start again in an existing study directory")
    st.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="finetune settings, e.g. train.lr=3e-4")
    st.set_defaults(func=_study)


def add_report(sub) -> None:
    rp = sub.add_parser(
        "report",
        help="a self-contained HTML page (+ report.md) for a run or a study",
        description="Pretraining runs: loss and learning-rate curves (and sample generations for gpt2, t5, "
        "bart); finetune runs: validation curves and test metrics; word2vec runs: analogy table and "
        "projection; studies: accuracy vs label fraction, convergence, the final table. Plots are embedded, "
        "the page needs no network.",
    )
    rp.add_argument("target", metavar="RUN_OR_STUDY", help="run or study directory")
    rp.add_argument("--out", help="HTML file to write (default RUN_OR_STUDY/report.html); .md beside it")
    rp.set_defaults(func=_report)


def add_demo(sub) -> None:
    dm = sub.add_parser("demo", help="the whole path on the embedded real data, with a report")
    dm.add_argument("--out", default="runs/demo", help="directory for the demo's runs and report")
    dm.add_argument("--quick", action="store_true", help="a tiny budget, to check that everything runs")
    dm.add_argument("--overwrite", action="store_true", help="replace an earlier demo directory")
    dm.add_argument(
        "--all-labels",
        action="store_true",
        help="run the all-label studies even where this machine is too slow for the demo's 12 minutes "
        "(by default they are then left out, and the report says so)",
    )
    dm.set_defaults(func=_demo)
