"""`warmstart pretrain` and `warmstart finetune`: flags that set config keys, then one function each.

Each flag's help is its config field's help, with the key and the default that this command runs with
(finetuning's own defaults, commands/finetune.py DEFAULTS, are not pretraining's)."""

from __future__ import annotations

from warmstart.cli.common import config_flags, config_rows, flag_keys, flags, raw_epilog
from warmstart.cli.finished import finished_lines

PRETRAIN_FLAGS = [  # (flag, config key, add_argument keywords)
    ("--corpus", "data.corpus", {"nargs": "+"}),
    ("--text-column", "data.text_column", {}),
    ("--tokenizer", "data.tokenizer", {}),
    ("--shards", "data.shards", {}),
    ("--init", "init", {"metavar": "RUN_OR_CHECKPOINT"}),
    ("--arch", "arch", {}),
    ("--objective", "objective", {}),
    ("--steps", "train.steps", {}),
    ("--seq-len", "data.seq_len", {}),
    ("--batch-size", "train.batch_size", {}),
    ("--lr", "train.lr", {}),
    ("--seed", "train.seed", {}),
    ("--out", "out", {}),
]

FINETUNE_FLAGS = [
    ("--init", "init", {}),
    ("--dataset", "data.dataset", {"also": ("--data",), "metavar": "DATASET"}),
    ("--train-file", "data.train_file", {"metavar": "FILE"}),
    ("--validation-file", "data.validation_file", {"metavar": "FILE"}),
    ("--test-file", "data.test_file", {"metavar": "FILE"}),
    ("--task", "task.name", {}),
    ("--from-scratch", "from_scratch", {}),
    ("--epochs", "epochs", {}),
    ("--lr", "train.lr", {}),
    ("--batch-size", "train.batch_size", {}),
    ("--max-length", "task.max_length", {}),
    ("--seeds", "seeds", {}),  # "1,2,3": read as a list by the config
    ("--strategy", "strategy.strategy", {}),
    ("--text-column", "data.text_column", {}),
    ("--text-pair-column", "data.text_pair_column", {}),
    ("--label-column", "data.label_column", {}),
    ("--target-column", "data.target_column", {}),
    ("--out", "out", {}),
]


def _pretrain(a):
    from warmstart.commands.pretrain import pretrain

    if a.corpus:  # KEY=VALUE overrides typed after --corpus land there: move them back
        a.overrides = a.overrides + [c for c in a.corpus if "=" in c]
        a.corpus = [c for c in a.corpus if "=" not in c]
    result = pretrain(
        a.preset, a.config, flags(a, flag_keys(PRETRAIN_FLAGS)), a.overrides, resume=a.resume,
        overwrite=a.overwrite,
    )  # fmt: skip
    m = result["metrics"]
    # every validation metric of the objective (ELECTRA adds rtd_*, NSP/SOP sentence_*)
    print(f"done: step {result['step']}, validation " + ", ".join(f"{k} {v:.4g}" for k, v in m.items()))
    if result.get("data"):  # data.max_tokens
        d = result["data"]
        print(f"data: {d['unique_tokens']:,} unique tokens, {d['repeats']:.3g} repeats")
    print("\n".join(finished_lines(result["run_dir"], "pretrain")))


def _finetune(a):
    from warmstart.commands.finetune import finetune
    from warmstart.tasks.breakdown import one_class_warning

    result = finetune(
        a.config, flags(a, flag_keys(FINETUNE_FLAGS)), a.overrides, resume=a.resume, overwrite=a.overwrite
    )
    for seed, run in result["runs"].items():
        test = run["test_metrics"]["test"]
        shown = ", ".join(f"{k} {v:.4f}" for k, v in test.items() if k != "loss")
        print(f"seed {seed}: test {shown} (best validation step {run['test_metrics']['best_step']})")
    if "summary" in result:
        for name, m in result["summary"]["metrics"].items():
            print(
                f"{name}: mean {m['mean']:.4f}, median {m['median']:.4f}, std {m['std']:.4f}, "
                f"min {m['min']:.4f}, max {m['max']:.4f}"
            )
        failed = result["summary"].get("failed")
        if failed:
            print(
                f"failed runs (best validation accuracy at or below the majority class's "
                f"{failed['majority_validation']:.4f}): {failed['count']} of {len(result['runs'])}"
                + (f" (seeds {', '.join(map(str, failed['seeds']))})" if failed["seeds"] else "")
            )
    for seed, run in result["runs"].items():
        warning = one_class_warning(run["test_metrics"].get("breakdown"))
        if warning:
            print(warning + (f" (seed {seed})" if len(result["runs"]) > 1 else ""))
    print("\n".join(finished_lines(result["run_dir"], "finetune")))


def _run_options(p, example: str) -> None:
    p.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run exactly")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help=f"config overrides, e.g. {example}")


def add_pretrain(sub) -> None:
    from warmstart.config import help_text, preset_names
    from warmstart.pretraining.config import PretrainConfig, family_help

    pt = sub.add_parser("pretrain", help="pretrain a model with a self-supervised objective")
    presets = "\n\npresets: " + ", ".join(preset_names())
    raw_epilog(pt, help_text(PretrainConfig) + family_help() + presets)
    pt.add_argument("--preset", help="model size preset, e.g. bert-mini (see the list below)")
    pt.add_argument("--config", help="YAML file of config keys")
    config_flags(pt, config_rows(PretrainConfig), PRETRAIN_FLAGS)
    _run_options(pt, "train.lr=3e-4")
    pt.set_defaults(func=_pretrain)


def add_finetune(sub) -> None:
    from warmstart.commands.finetune import DEFAULTS, FinetuneConfig
    from warmstart.config import help_text

    ft = sub.add_parser("finetune", help="finetune a pretrained model on a labeled task")
    raw_epilog(ft, help_text(FinetuneConfig, DEFAULTS))
    config_flags(ft, config_rows(FinetuneConfig, DEFAULTS), FINETUNE_FLAGS)
    ft.add_argument("--config", help="YAML file of config keys")
    _run_options(ft, "train.lr=3e-5")
    ft.set_defaults(func=_finetune)
