"""``warmstart.search``: `warmstart search` from Python (commands/search.py)."""

from __future__ import annotations

from os import PathLike
from typing import Any

from warmstart.api import checks
from warmstart.api.data import as_source
from warmstart.errors import WarmstartError


def search(
    *dotted: str,
    init: str | PathLike,
    data: Any,
    out: str | PathLike,
    trials: int = 16,
    space: str | PathLike = "lectures",
    repeats: int = 1,
    pruner: str = "median",
    final_seeds: int = 3,
    storage: str | None = None,
    study_name: str = "search",
    workers: int = 1,
    sampler_seed: int = 0,
    keep_models: bool = False,
    default: bool = True,
    report: bool = True,
    overwrite: bool = False,
) -> dict:
    """Search finetuning settings of ``init`` on ``data`` with Optuna: ``trials`` finetune runs under
    ``out``/trials with settings from ``space`` ("bert-grid", "lectures" or a YAML file of ranges over config
    keys), each scored by its best validation score (the mean over ``repeats`` seeds); ``pruner`` ("median",
    "halving", "none") stops bad starts; then the best configuration and (``default``) the default recipe
    run with ``final_seeds`` seeds on the test split. The study lives in ``storage`` (an SQLAlchemy URL;
    default SQLite in ``out``): the same call again resumes it, and other processes or machines given the
    same ``storage`` add trials to it. ``dotted``: finetune settings for every trial ("task.max_length=64").

    Returns search.json's dict: ``best`` (number, params, validation), ``final`` and ``default`` (each seed's
    validation and test score), ``trials`` (every finished trial), ``report`` (report.html's path)."""
    from warmstart.commands.search import check_spec, run_search
    from warmstart.study.search_spec import SearchSpec

    fn = "search"
    for i, item in enumerate(dotted):
        if not isinstance(item, str) or "=" not in item:
            raise checks.ArgumentValueError(
                f"{fn}: positional settings must be KEY=VALUE texts, got {checks.type_name(item)} at {i}",
                'e.g. search("task.max_length=64", init=..., data=..., out=...)',
            )
    where: str = checks.path(fn, "init", init)
    to: str = checks.path(fn, "out", out)
    space = str(space) if isinstance(space, PathLike) else space
    if not isinstance(space, str) or not space:
        raise checks.ArgumentTypeError(f"{fn}: space must be a name or a YAML file", "e.g. space='bert-grid'")
    for name, value in (("trials", trials), ("repeats", repeats), ("workers", workers)):
        checks.whole(fn, name, value, 1, example=f"{name}=3")
    checks.whole(fn, "final_seeds", final_seeds, 0, example="final_seeds=3")
    checks.whole(fn, "sampler_seed", sampler_seed, 0, example="sampler_seed=0")
    for name, value in (("keep_models", keep_models), ("default", default), ("report", report)):
        checks.flag(fn, name, value)
    checks.flag(fn, "overwrite", overwrite)
    if data is None:
        raise WarmstartError(f"{fn}: data is missing", "pass data='rotten-tomatoes', a file or records")
    spec = SearchSpec(
        init=where, overrides=list(dotted),
        space=space, trials=trials, repeats=repeats, pruner=pruner, final_seeds=final_seeds,
        sampler_seed=sampler_seed, storage=storage or "", study_name=study_name, workers=workers,
        keep_models=keep_models, default=default,
    )  # fmt: skip
    check_spec(spec)  # the space and the settings, before the data is written to the cache
    spec.flags = {"data": {"dataset": as_source(data, "data", fn)}}
    return run_search(spec, to, overwrite=overwrite, report=report)
