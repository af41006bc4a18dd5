"""`warmstart evaluate-suite glue`: finetune and score a pretrained run on the GLUE tasks, one table."""

from __future__ import annotations

from warmstart.cli.common import config_flags, config_rows, flag_keys, flags

SUITE_FLAGS = [  # finetune's budget flags, applied to every task's finetune
    ("--epochs", "epochs", {}),
    ("--max-steps", "train.steps", {}),
    ("--train-fraction", "data.train_fraction", {}),
    ("--lr", "train.lr", {}),
    ("--batch-size", "train.batch_size", {}),
    ("--max-length", "task.max_length", {}),
    ("--seed", "train.seed", {}),
]


def _glue(a):
    from warmstart.commands.glue_suite import evaluate_glue

    given = flags(a, flag_keys(SUITE_FLAGS))
    if a.seed is not None:
        given["seeds"] = [a.seed]
    result = evaluate_glue(a.init, a.glue_dir, a.out, a.tasks, given, a.overrides, overwrite=a.overwrite)
    print(result["table"])
    print(f"written to {result['run_dir']} (suite.json, suite.md, one finetune run per task)")


def add_suite(sub) -> None:
    from warmstart.commands.finetune import DEFAULTS, FinetuneConfig

    suite = sub.add_parser("evaluate-suite", help="finetune and score a pretrained run on a benchmark suite")
    suites = suite.add_subparsers(dest="suite", required=True, metavar="SUITE", help="the suite: glue")
    glue = suites.add_parser(
        "glue",
        help="the GLUE tasks, each finetuned and scored on its dev set(s) with its official metric (MCC for "
        "CoLA, F1/accuracy for MRPC and QQP, Pearson/Spearman for STS-B, accuracy for the rest), and the "
        "average",
    )
    glue.add_argument("--init", required=True, help="the pretrained run or checkpoint directory")
    glue.add_argument(
        "--glue-dir",
        required=True,
        metavar="DIR",
        help="a glue_data folder in the original TSV layout (CoLA/train.tsv, SST-2/, MRPC/, ...), or "
        "hf:nyu-mll/glue (the hub, through the datasets library)",
    )
    glue.add_argument(
        "--tasks",
        help="comma-separated tasks (default: all): cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli",
    )
    config_flags(glue, config_rows(FinetuneConfig, DEFAULTS), SUITE_FLAGS)
    glue.add_argument("--out", required=True, help="output directory (suite.json, suite.md, a run per task)")
    glue.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    glue.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE", help="finetune config overrides, e.g. train.lr=3e-5"
    )
    glue.set_defaults(func=_glue)
