"""`warmstart search`: Optuna trials over finetuning settings, each an ordinary finetune run under
DIR/trials/, in a study that resumes (study/search_storage.py); then the best configuration and the
default recipe again with --final-seeds seeds on the test split, and a report (report/search_report.py).

DIR holds search.yaml (the spec), search.db (the study, unless --storage), trials/trial-NNNN/ (the runs),
default/ and final/ (the seeded re-runs), best (a link to the run that answers: final/'s best seed), and
search.json + report.html/.md.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

from warmstart.commands.finetune import FinetuneConfig, finetune, resolve
from warmstart.config import merge
from warmstart.errors import WarmstartError
from warmstart.outputs import mark
from warmstart.paths import refuse_overlap
from warmstart.study import search_storage as store
from warmstart.study.cells import WEIGHTS
from warmstart.study.parallel import run_cells
from warmstart.study.search_space import Space, open_space, overrides
from warmstart.study.search_spec import SPEC_FILE, SearchSpec, check_search_dir
from warmstart.study.spec import save_spec
from warmstart.train.best_metric import LOWER_IS_BETTER
from warmstart.train.rundir import abandon, open_run_dir, settle

RESULT_FILE = "search.json"


class Pruning:
    """The callback that reports a trial's validation curve to Optuna and stops a trial it prunes. The step
    it reports is the evaluation's number (1, 2, ...), the same share of an epoch for every batch size.

    A trial is judged only once its warmup is over and it has seen its data once (``epochs`` of its
    config; None when train.steps was set): at the first evaluation, a quarter epoch in, a 3-epoch run was
    still warming up (warmup_ratio 0.1 of its steps) while a 1-epoch run had trained at its full rate, and
    the median pruner stopped the longer runs (Brown POS at 10%: lr 4.2e-5, batch 2, 3 epochs stopped at
    0.57 against the 0.82 that the same rate reached over 2 epochs).

    With ``--repeats``, the seeds run one after another and the trial is judged on its first seed's curve,
    as every other trial is; the later seeds of a trial that passed run to their end. The last evaluation
    judges nothing: the trial has trained to its end and completes (a 1-epoch trial is never stopped)."""

    def __init__(self, trial, epochs: float | None = None):
        self.trial, self.metric, self.evals, self.epochs, self.judged_from = trial, None, 0, epochs, 0
        self.runs, self.steps = 0, 0

    def on_train_begin(self, info: dict) -> None:
        self.runs += 1
        self.metric = info["metric"]
        steps, warmup = info.get("steps") or 0, info.get("warmup_steps") or 0
        self.steps = steps
        epoch = math.ceil(steps / self.epochs) if self.epochs else 0
        self.judged_from = max(warmup + 1, min(epoch, steps))  # the first step at which it may be stopped

    def on_evaluate(self, step: int, metrics: dict) -> None:
        import optuna

        value = metrics.get(self.metric)
        if step == 0 or self.runs > 1 or not isinstance(value, int | float):  # step 0: the untrained model
            return
        self.evals += 1
        self.trial.report(float(value), self.evals)
        if self.judged_from <= step < self.steps and self.trial.should_prune():  # its end: it completes
            raise optuna.TrialPruned(f"pruned at evaluation {self.evals} ({self.metric} {value:.4f})")


def _direction(spec: SearchSpec) -> str:
    """maximize, unless train.metric_for_best_model names a metric where lower is better."""
    cfg = _config(spec, [])
    name, greater = cfg.train.metric_for_best_model, cfg.train.greater_is_better
    if greater is not None:
        return "maximize" if greater else "minimize"
    lower = name and any(word in name.lower() for word in LOWER_IS_BETTER)
    return "minimize" if lower else "maximize"


def _config(spec: SearchSpec, extra: list[str]) -> FinetuneConfig:
    """The finetune config of a trial with settings ``extra``: bad keys and values are refused here."""
    return resolve(None, {**spec.flags, "init": spec.init}, [*spec.overrides, *extra])


def run_trial(spec: SearchSpec, out: Path, trial, params: dict) -> float:
    """Finetune one configuration (``repeats`` seeds unless ``seed`` is a dimension); the mean of the best
    validation scores. Raises optuna.TrialPruned when the pruner stops it."""
    run_dir = out / "trials" / f"trial-{trial.number:04d}"
    seeds = [] if "seed" in params else [f"seeds={list(range(1, spec.repeats + 1))}"]
    flags = _flags(spec, run_dir, breakdown=False)
    trial.set_user_attr("run_dir", str(run_dir.relative_to(out)))
    cfg = _config(spec, overrides(params))
    pruning = Pruning(trial, None if cfg.train.steps else cfg.epochs)
    start = time.perf_counter()
    try:
        result = finetune(
            None, flags, [*spec.overrides, *overrides(params), *seeds], overwrite=True, hooks=[pruning]
        )
    finally:
        trial.set_user_attr("seconds", round(time.perf_counter() - start, 2))
        if not spec.keep_models:
            _drop_weights(run_dir)
    values = [r["test_metrics"]["best_validation"] for r in result["runs"].values()]
    trial.set_user_attr("metric", next(iter(result["runs"].values()))["test_metrics"]["metric"])
    trial.set_user_attr("seed_values", values)
    return sum(values) / len(values)


def _flags(spec: SearchSpec, run_dir: Path, **more) -> dict:
    """The finetune flags of one run of the search: the command's, the model, the directory, no bar."""
    return merge(spec.flags, {"init": spec.init, "out": str(run_dir), "train": {"progress": False}, **more})


def _drop_weights(run_dir: Path) -> None:
    for d in [run_dir, *run_dir.glob("seed-*")]:
        for name in WEIGHTS:
            shutil.rmtree(d / name, ignore_errors=True)


def work(spec: SearchSpec, out: Path, direction: str) -> int:
    """One worker: ask, run and tell trials until the study holds ``spec.trials``; the number it ran."""
    import optuna
    from optuna.trial import TrialState

    space, study, ran = open_space(spec.space), store.open_study(spec, out, direction), 0
    while True:
        with store.asking(spec, out):
            for number in store.fail_dead(study):
                print(f"search: trial {number} was killed with its process: it runs again", file=sys.stderr)
            if store.counted(study) >= spec.trials:
                return ran
            if space.grid and not store.waiting(study):  # a retry waits: it is asked first
                point = store.next_point(study, space, spec.sampler_seed)
                if point is None:
                    return ran
                study.enqueue_trial(point, skip_if_exists=False)
            trial = study.ask()
            store.claim(trial)
        params = {d.key: d.suggest(trial) for d in space.dims}
        with store.beating(study, trial):
            try:
                value = run_trial(spec, out, trial, params)
            except optuna.TrialPruned as pruned:
                study.tell(trial, state=TrialState.PRUNED)
                print(f"search: trial {trial.number} {pruned}", file=sys.stderr)
            except BaseException:
                study.tell(trial, state=TrialState.FAIL)
                raise
            else:
                study.tell(trial, value)
                print(
                    f"search: trial {trial.number} {_shown(params)}: validation {value:.4f}", file=sys.stderr
                )
        ran += 1


def _shown(params: dict) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _work_in_process(spec_dict: dict, out: str, direction: str) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return work(SearchSpec(**spec_dict), Path(out), direction)


def _seeded_in_process(spec_dict: dict, out: str, name: str, params: dict | None, trial: int | None) -> dict:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return _seeded(SearchSpec(**spec_dict), Path(out), name, params, trial)


def _seeded(spec: SearchSpec, out: Path, name: str, params: dict | None, trial: int | None = None) -> dict:
    """The default recipe (``params`` None) or the best configuration (trial ``trial``), once per final
    seed, into DIR/``name`` with the test split scored. Finished runs of the same settings are read
    back; those of an earlier best (a search extended by a larger --trials) move to
    DIR/``name``-trial-NNNN, kept."""
    run_dir, seeds = out / name, list(range(1, spec.final_seeds + 1))
    chosen = {k: v for k, v in (params or {}).items() if k != "seed"}
    if (run_dir / "search_run.json").is_file():
        done = json.loads((run_dir / "search_run.json").read_text())
        if done["params"] == chosen and len(done["seeds"]) == len(seeds):
            return done
        _keep_earlier(run_dir, done.get("trial"))
    flags = _flags(spec, run_dir)
    result = finetune(None, flags, [*spec.overrides, *overrides(chosen), f"seeds={seeds}"], overwrite=True)
    runs = {int(s): r["test_metrics"] for s, r in result["runs"].items()}
    metric = next(iter(runs.values()))["metric"]
    best_seed = max(runs, key=lambda s: runs[s]["best_validation"])
    summary = {
        "params": chosen,
        "metric": metric,
        "seeds": {
            s: {"validation": r["best_validation"], "test": r["test"][metric]} for s, r in runs.items()
        },
        "run_dir": name,
        "trial": trial,
        "best_seed_dir": name if len(runs) == 1 else f"{name}/seed-{best_seed}",
    }
    (run_dir / "search_run.json").write_text(json.dumps(summary, indent=1))
    return summary


def _keep_earlier(run_dir: Path, trial: int | None) -> None:
    """Moves the seeded runs of an earlier best (or an earlier number of seeds) aside, under a free name."""
    stem = f"{run_dir.name}-trial-{trial:04d}" if trial is not None else f"{run_dir.name}-earlier"
    kept, n = run_dir.with_name(stem), 2
    while kept.exists():
        kept, n = run_dir.with_name(f"{stem}-{n}"), n + 1
    run_dir.rename(kept)
    print(f"search: the seeded runs of the earlier best are kept in {kept}", file=sys.stderr)


def _link_best(out: Path, target: str) -> None:
    link = out / "best"
    if link.is_symlink() or link.exists():
        if not link.is_symlink():
            raise WarmstartError(f"{link} exists and is not the search's link", "move it away and rerun")
        link.unlink()
    link.symlink_to(target, target_is_directory=True)


def check_spec(spec: SearchSpec) -> Space:
    """The spec's space, once its keys and a point of it passed the finetune config's checks."""
    space = open_space(spec.space)
    _config(spec, overrides(space.example()))  # an unknown key or a bad value in the space, before any work
    return space


def run_search(spec: SearchSpec, out: str | Path, overwrite: bool = False, report: bool = True) -> dict:
    """Run (or resume) the search into ``out``; returns search.json's dict."""
    try:
        import optuna  # noqa: F401 - a missing optuna is one line before anything is written
    except ImportError:
        raise WarmstartError("warmstart search needs optuna", 'pip install "warmstart[search]"') from None

    out = Path(out)
    refuse_overlap(out, {"--init": spec.init, "--space": spec.space if Path(spec.space).exists() else None})
    space = check_spec(spec)
    if space.grid and spec.trials > space.size():
        print(
            f"search: {space.name} has {space.size()} configurations: {space.size()} trials", file=sys.stderr
        )
    direction = _direction(spec)
    state = check_search_dir(out, spec, overwrite)
    if state == "replace":
        open_run_dir(out, overwrite=True, what="search")
    out.mkdir(parents=True, exist_ok=True)
    mark(out, "search")
    save_spec(out, spec, SPEC_FILE)
    print(f"search: {space.describe()}; {spec.trials} trials in {spec.storage_url(out)}", file=sys.stderr)
    try:
        jobs = [(i, (spec.to_dict(), str(out), direction)) for i in range(spec.workers)]
        if spec.workers == 1:
            work(spec, out, direction)
        else:
            store.open_study(spec, out, direction)  # the tables and the study exist before the workers start
            run_cells(jobs, spec.workers, _work_in_process, lambda key, ran: None)
        settle(out)
    except BaseException:
        abandon(out)
        raise
    return finish(spec, out, direction, report)


def finish(spec: SearchSpec, out: Path, direction: str, report: bool = True) -> dict:
    """The seeded re-runs, the link to the best run, search.json and the report."""
    from optuna.trial import TrialState

    study = store.open_study(spec, out, direction)
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not done:
        raise WarmstartError(f"no trial of {out} finished", "see the lines above; rerun to resume the search")
    best = study.best_trial
    result = {
        "spec": spec.to_dict(),
        "direction": direction,
        "metric": best.user_attrs.get("metric"),
        "best": {"number": best.number, "params": best.params, "validation": best.value},
        "trials": [_row(t) for t in study.get_trials(deepcopy=False) if t.state.is_finished()],
    }
    if spec.default:
        result["default"] = None  # stays None without seeded re-runs; its place in search.json kept
    reruns = [("final", best.params, best.number)] if spec.final_seeds else []
    reruns += [("default", None, None)] if spec.default and spec.final_seeds else []
    jobs = [(name, (spec.to_dict(), str(out), name, params, trial)) for name, params, trial in reruns]
    run_cells(jobs, min(spec.workers, len(jobs)), _seeded_in_process, result.__setitem__)  # side by side
    if spec.final_seeds:
        _link_best(out, result["final"]["best_seed_dir"])
    else:
        _link_best(out, best.user_attrs["run_dir"])
    (out / RESULT_FILE).write_text(json.dumps(result, indent=1))
    if report:
        from warmstart.report.search_report import write_search_report

        result["report"] = str(write_search_report(out, result))
    return result


def _row(t) -> dict:
    return {
        "number": t.number,
        "state": t.state.name.lower(),
        "params": t.params,
        "value": t.value,
        "intermediate": {int(k): v for k, v in t.intermediate_values.items()},
        "seconds": t.user_attrs.get("seconds"),
        "retry_of": t.user_attrs.get("retry_of"),
        "run_dir": t.user_attrs.get("run_dir"),
    }
