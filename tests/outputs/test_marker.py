"""What warmstart made says so (issue 38): the `.warmstart` marker in new directories, and directories
older versions made known by their files, so that --overwrite still replaces them."""

import json
import shutil
from pathlib import Path

import pytest

from warmstart.errors import WarmstartError
from warmstart.outputs import made_by_warmstart, mark, refuse_foreign
from warmstart.train.rundir import open_run_dir

OLD_RUNS = Path(__file__).parents[1] / "fixtures" / "old_runs"


def test_a_new_run_directory_is_marked_with_its_kind(tmp_path):
    run = open_run_dir(tmp_path / "study", what="study")
    assert json.loads((run / ".warmstart").read_text())["kind"] == "study"
    assert made_by_warmstart(run) == "study"


def test_shards_are_marked(small_shards):
    assert made_by_warmstart(small_shards) == "shards"
    assert (small_shards / ".warmstart").is_file()


@pytest.mark.parametrize(
    ("files", "kind"),
    [
        ({"config.yaml": "out: x\n"}, "run"),
        ({"study.json": "{}"}, "study"),
        ({"meta.json": '{"splits": {}}', "train.bin": ""}, "shards"),
        ({"config.json": '{"warmstart": {}}', "model.safetensors": ""}, "model"),
        ({"tokenizer.json": "{}", "tokenizer_config.json": "{}"}, "tokenizer"),
        ({"config.json": '{"model_type": "bert"}', "README.md": "---\ntags: [warmstart]\n---\n"}, "export"),
        ({"config.json": '{"model_type": "bert"}'}, None),  # a transformers model: not ours
        ({"notes.txt": "mine"}, None),
        ({"tokenizer.json": "{}", "notes.txt": "mine"}, None),
    ],
)
def test_older_directories_are_known_by_their_files(tmp_path, files, kind):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert made_by_warmstart(tmp_path) == kind


def test_an_old_run_is_replaceable_and_a_folder_of_notes_is_not(tmp_path):
    old = shutil.copytree(OLD_RUNS / "pretrained", tmp_path / "old")
    refuse_foreign(old)  # no error
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(6):
        (notes / f"n{n}.txt").write_text("mine")
    with pytest.raises(
        WarmstartError, match=r"did not make \(6 entries: n0.txt, n1.txt, n2.txt, n3.txt and 2 more"
    ):
        refuse_foreign(notes)
    mark(notes, "run")  # what warmstart marked, it may replace
    refuse_foreign(notes)


def test_overwrite_from_python_refuses_a_foreign_directory_and_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "mine.txt").write_text("mine")
    with pytest.raises(WarmstartError, match="did not make"):
        open_run_dir(tmp_path, overwrite=True)
    monkeypatch.chdir(tmp_path)
    mark(tmp_path, "run")
    with pytest.raises(WarmstartError, match="is the working directory"):
        open_run_dir(".", overwrite=True)
    assert (tmp_path / "mine.txt").read_text() == "mine"
