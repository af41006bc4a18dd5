"""What ``warmstart.pretrain``, ``finetune`` and ``train_word2vec`` return, and
``warmstart.open_run(path)`` (the same as ``Run.from_dir``) reads back from a run directory: the directory,
its metrics, its training history as a pandas DataFrame, and ``load()`` for the model it trained."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warmstart.errors import WarmstartError
from warmstart.yaml_loader import load

if TYPE_CHECKING:
    import pandas as pd

    from warmstart.api.model import Model


@dataclass
class Run:
    """A run directory and its results. ``metrics``: a finetune's test metrics (the summary over seeds
    when there are several), a pretraining's last validation metrics, word2vec's evaluation;
    ``test_metrics``: a finetune's test metrics per seed; ``history``: every record of metrics.jsonl."""

    path: Path
    command: str
    result: dict[str, Any]

    @classmethod
    def from_dir(cls, path: str | Path) -> Run:
        """The Run of an existing run directory (finished, or a finetune's seeds so far), as the function
        that made it returned it."""
        from warmstart.api import checks
        from warmstart.api.python_errors import translate

        try:
            return _read(Path(checks.path("open_run", "path", path)))
        except WarmstartError as exc:
            translate(exc, "open_run")
            raise

    @property
    def metrics(self) -> dict[str, Any]:
        r = self.result
        if self.command == "finetune":
            if "summary" in r:
                return r["summary"]
            (only,) = r["runs"].values()
            return only["test_metrics"]["test"]
        if self.command == "word2vec":
            return {k: v for k, v in r.items() if k in ("analogy", "similarity", "train")}
        return r.get("metrics", {})

    @property
    def test_metrics(self) -> dict[str, Any]:
        """A finetune's test metrics of the best model: {metric: value} for one seed, {seed: {metric:
        value}} for several (the whole record, sizes and best step too, is RUN[/seed-N]/test_metrics.json)."""
        if self.command != "finetune":
            raise WarmstartError(
                f"{self.path} is a {self.command} run, which has no test split",
                "use run.metrics (its last evaluation)",
            )
        runs = {seed: r["test_metrics"]["test"] for seed, r in self.result["runs"].items()}
        return next(iter(runs.values())) if len(runs) == 1 else runs

    @property
    def history(self) -> pd.DataFrame:
        """Every record of RUN/metrics.jsonl as a pandas DataFrame, one row per record: columns ``step``,
        ``split`` (train, validation, and events such as stop or bad_step), ``time`` (Unix seconds) and the
        metric names (NaN where a record has none); a run with several seeds has a ``seed`` column first.
        ``run.history.query("split == 'validation'").plot(x="step", y="loss")`` draws a curve."""
        try:
            import pandas as pd
        except ImportError:
            raise WarmstartError("run.history needs pandas", "pip install pandas") from None
        dirs: dict[int | None, Path] = dict(_seed_dirs(self.path).items()) or {None: self.path}
        rows = []
        for seed, d in dirs.items():
            for record in _records(d):
                rows.append({"seed": seed, **record} if seed is not None else record)
        if not rows:
            raise WarmstartError(
                f"{self.path} has no metrics.jsonl records", "pass a pretrain or finetune run"
            )
        frame = pd.DataFrame(rows)
        first = [c for c in ("seed", "step", "split") if c in frame.columns]
        return frame[first + [c for c in frame.columns if c not in first]]

    def load(self, device: Any = None, dtype: Any = None) -> Model:
        """The trained model (the best one of a finetune), as ``warmstart.load(run.path, device, dtype)``."""
        from warmstart.api.model import load

        return load(self.path, device=device, dtype=dtype)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in self.metrics.items() if isinstance(v, int | float))
        return f"Run({self.command}, {str(self.path)!r}{', ' + shown if shown else ''})"


def open_run(path: str | Path) -> Run:
    """The Run of an existing run directory (``Run.from_dir``)."""
    return Run.from_dir(path)


def _read(d: Path) -> Run:
    config = d / "config.yaml"
    if not config.is_file():
        raise WarmstartError(f"{d} is not a run directory (it has no config.yaml)", "pass a run's directory")
    saved = load(config.read_text(encoding="utf-8")) or {}
    if "word2vec" in saved:
        return Run(d, "word2vec", {**_json(d / "metrics.json", d), "run_dir": str(d)})
    if "task" in saved:
        dirs = _seed_dirs(d) or {int((saved.get("seeds") or [0])[0]): d}
        runs = {seed: {"test_metrics": _json(s / "test_metrics.json", d)} for seed, s in dirs.items()
                if (s / "test_metrics.json").is_file()}  # fmt: skip
        if not runs:
            raise WarmstartError(
                f"{d} has no test metrics yet (the run did not finish)",
                f'finish it with warmstart.finetune(resume="{d}")',
            )
        result: dict[str, Any] = {"runs": runs, "run_dir": str(d)}
        if (d / "summary.json").is_file():
            result["summary"] = _json(d / "summary.json", d)
        return Run(d, "finetune", result)
    validation = [r for r in _records(d) if r["split"] == "validation"]
    last = (
        {k: v for k, v in validation[-1].items() if k not in ("step", "split", "time")} if validation else {}
    )
    step = validation[-1]["step"] if validation else 0
    return Run(d, "pretrain", {"metrics": last, "step": step, "run_dir": str(d)})


def _seed_dirs(d: Path) -> dict[int, Path]:
    """{seed: RUN/seed-N} of a finetune with several seeds, in seed order ({} for one seed)."""
    found = {}
    for s in Path(d).glob("seed-*"):
        number = s.name.removeprefix("seed-")
        if s.is_dir() and number.lstrip("-").isdigit():
            found[int(number)] = s
    return dict(sorted(found.items()))


def _records(d: Path) -> list[dict]:
    path = d / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # a line being written, or cut by a kill
    return rows


def _json(path: Path, run: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WarmstartError(f"cannot read {path} ({exc})", f"check the run directory {run}") from None
