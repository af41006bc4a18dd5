"""Processes sharing one study draw different configurations (issue 42). Each process holds its own sampler;
with one seed per process, two processes (``--workers 2``, two machines on one ``--storage``) ran the same
learning rates in the same order, and a resumed search ran its first configurations again. Each study
below is opened as a process opens it (``open_study``, its own sampler), on a real SQLite database."""

from __future__ import annotations

from pathlib import Path

from warmstart.study.search_space import open_space
from warmstart.study.search_spec import SearchSpec
from warmstart.study.search_storage import open_study

YAML = "train.lr: {type: float, low: 1.0e-5, high: 1.0e-3, log: true}\ntrain.batch_size: [8, 16, 32]\n"


def _spec(tmp_path: Path, db: str = "shared.db", seed: int = 0) -> SearchSpec:
    space = tmp_path / "space.yaml"
    space.write_text(YAML)
    return SearchSpec(
        init="unused", storage=f"sqlite:///{tmp_path / db}", space=str(space), trials=16, sampler_seed=seed
    )


def _ask(study, spec: SearchSpec, value: float) -> tuple:
    trial = study.ask()
    params = {d.key: d.suggest(trial) for d in open_space(spec.space).dims}
    study.tell(trial, value)
    return trial.number, params["train.lr"], params["train.batch_size"]


def _drawn(tmp_path: Path, db: str, seed: int = 0) -> list[tuple]:
    spec = _spec(tmp_path, db, seed)
    study = open_study(spec, tmp_path)
    return [_ask(study, spec, 0.5 + i / 100) for i in range(6)]


def test_two_processes_on_one_study_draw_different_configurations(tmp_path):
    spec = _spec(tmp_path)
    first, second = open_study(spec, tmp_path), open_study(spec, tmp_path)  # two processes' samplers
    drawn = [_ask(study, spec, 0.5 + i / 100) for i in range(5) for study in (first, second)]
    assert [n for n, _, _ in drawn] == list(range(10))
    rates = [lr for _, lr, _ in drawn]
    assert len(set(rates)) == len(rates), rates  # no process repeats another's learning rate


def test_a_resumed_study_draws_new_configurations(tmp_path):
    spec = _spec(tmp_path)
    before = [_ask(open_study(spec, tmp_path), spec, 0.6) for _ in range(1)]
    before += [_ask(open_study(spec, tmp_path), spec, 0.7 - i / 100) for i in range(3)]  # 3 more processes
    rates = [lr for _, lr, _ in before]
    assert len(set(rates)) == 4, rates


def test_the_same_seed_draws_the_same_study_again_and_another_seed_does_not(tmp_path):
    once, again, other = _drawn(tmp_path, "a.db"), _drawn(tmp_path, "b.db"), _drawn(tmp_path, "c.db", seed=1)
    assert once == again  # a search rerun from scratch asks the same configurations
    assert [lr for _, lr, _ in once] != [lr for _, lr, _ in other]
    assert all(1e-5 <= lr <= 1e-3 and bs in (8, 16, 32) for _, lr, bs in once)
