"""`warmstart search`: finetuning settings searched with Optuna (commands/search.py)."""

from __future__ import annotations

from warmstart.cli.common import config_flags, config_rows, flag_keys, flags
from warmstart.cli.train import FINETUNE_FLAGS

# the finetune flags a search passes on to every trial (--init, --out and --seeds are its own)
TRIAL_FLAGS = [row for row in FINETUNE_FLAGS if row[0] not in ("--init", "--out", "--seeds")]


def _search(a):
    from warmstart.commands.search import run_search
    from warmstart.study.search_spec import SearchSpec

    spec = SearchSpec(
        init=a.init,
        flags=flags(a, flag_keys(TRIAL_FLAGS)),
        overrides=list(a.overrides),
        space=a.space,
        trials=a.trials,
        repeats=a.repeats,
        pruner=a.pruner,
        final_seeds=a.final_seeds,
        sampler_seed=a.sampler_seed,
        storage=a.storage or "",
        study_name=a.study_name,
        workers=a.workers,
        keep_models=a.keep_models,
        default=not a.no_default,
    )
    result = run_search(spec, a.out, overwrite=a.overwrite, report=not a.no_report)
    metric, best = result["metric"], result["best"]
    print(f"best trial #{best['number']}: validation {metric} {best['validation']:.4f} with {best['params']}")
    for name, label in (("final", "best configuration"), ("default", "default recipe")):
        run = result.get(name)
        if run:
            tests = [s["test"] for s in run["seeds"].values()]
            mean = sum(tests) / len(tests)
            print(f"{label}: test {metric} mean {mean:.4f} over {len(tests)} seeds ({run['run_dir']})")
    print(
        f"search: {a.out}/search.json, best run: {a.out}/best"
        + (f", report: {result['report']}" if "report" in result else "")
    )


def add_search(sub) -> None:
    from warmstart.commands.finetune import DEFAULTS, FinetuneConfig

    se = sub.add_parser(
        "search",
        help="search finetuning settings with Optuna trials (resumable, several processes or machines)",
        description="Finetune RUN once per trial with settings drawn from a space (the BERT paper's grid, "
        "the lectures' ranges, or a YAML file over any config key), scored by the best validation score; "
        "prune bad starts; then run the best configuration and the default recipe with --final-seeds seeds "
        "on the test split. The study lives in an RDB storage (SQLite in OUT by default): rerun the same "
        "command to resume it, or start the same command elsewhere with --storage to add workers.",
    )
    se.add_argument(
        "--init", required=True, metavar="RUN_OR_CHECKPOINT", help="the pretrained model to finetune"
    )
    se.add_argument("--out", required=True, help="search directory (trials/, search.db, best, report.html)")
    se.add_argument("--trials", type=int, default=16, help="trials to finish (a grid: at most its size)")
    se.add_argument(
        "--space", default="lectures", help="bert-grid (18 configurations), lectures (TPE over the lectures' "
        "ranges) or a YAML file of ranges, e.g. `train.lr: {type: float, low: 1e-5, high: 1e-4, log: true}`",
    )  # fmt: skip
    se.add_argument(
        "--repeats", type=int, default=1, help="seeds per configuration (a trial's score: their mean)"
    )
    se.add_argument(
        "--pruner", default="median", choices=["median", "halving", "none"], help="stop bad trials early"
    )
    se.add_argument(
        "--final-seeds", type=int, default=3, help="seeds of the best configuration's test runs (0: none)"
    )
    se.add_argument("--workers", type=int, default=1, help="trials at once on this machine, the cores split")
    se.add_argument("--storage", metavar="URL", help="SQLAlchemy URL of the study (default: sqlite in OUT)")
    se.add_argument("--study-name", default="search", help="the study's name in the storage")
    se.add_argument("--sampler-seed", type=int, default=0, help="seed of the sampler (and of a grid's order)")
    se.add_argument("--keep-models", action="store_true", help="keep every trial's weights (large)")
    se.add_argument("--no-default", action="store_true", help="do not run the default recipe for comparison")
    se.add_argument("--no-report", action="store_true", help="do not write report.html at the end")
    se.add_argument("--overwrite", action="store_true", help="start again in an existing search directory")
    config_flags(se, config_rows(FinetuneConfig, DEFAULTS), TRIAL_FLAGS)
    se.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="finetune settings for every trial")
    se.set_defaults(func=_search)
