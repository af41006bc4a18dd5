"""Processes that start a search together on a new database: one of this machine creates its tables
(CI saw a second one fail with "table studies already exists" when both raced SQLAlchemy's CREATE)."""

from __future__ import annotations

import threading

from warmstart.study.search_spec import SearchSpec
from warmstart.study.search_storage import asking, open_study


def test_a_new_study_is_created_under_the_machine_wide_lock(tmp_path):
    spec = SearchSpec(init="unused", storage=f"sqlite:///{tmp_path / 'shared.db'}", space="bert-grid")
    opened = []
    with asking(spec, tmp_path):  # another process of this machine is creating the tables
        thread = threading.Thread(target=lambda: opened.append(open_study(spec, tmp_path)))
        thread.start()
        thread.join(timeout=2)
        assert thread.is_alive() and not opened  # it waits rather than racing the CREATE
    thread.join(timeout=60)
    assert [s.study_name for s in opened] == ["search"]
    assert open_study(spec, tmp_path).study_name == "search"  # the second process finds it
