"""The output guard, enumerated (issue 38): every command, every output flag, against every input it reads,
the input's children, its side files and a symlink to it: refused in one line, nothing changed. A command
(or a flag that takes a path) that is not declared in cli/outputs.py fails here, so none can skip the
guard."""

import argparse
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import assert_one_line_error, run
from warmstart.cli.main import build_parser
from warmstart.cli.outputs import INPUT_DESTS, NOT_PATHS, OUTPUT_DESTS

pytestmark = pytest.mark.integration

OLD_RUNS = Path(__file__).parents[1] / "fixtures" / "old_runs"

# each command that writes: its command line with inputs from the world below; OUT marks the output
COMMANDS = {
    "tokenizer train": "tokenizer train --corpus {corpus} --out OUT",
    "prepare": "prepare --corpus {corpus} --tokenizer {tok} --out OUT",
    "pretrain": "pretrain --corpus {corpus} --tokenizer {tok} --init {pre} --out OUT",
    "finetune": "finetune --init {pre} --train-file {csv} --out OUT",
    "evaluate": "evaluate {ft} --test-file {csv} --out OUT",
    "predict": "predict {ft} --input {lines} --out OUT",
    "evaluate-suite glue": "evaluate-suite glue --init {pre} --glue-dir {glue} --tasks sst2 --out OUT",
    "embed": "embed {pre} --data {texts} --word the --out OUT",
    "fill-mask": "fill-mask {pre} --bias --out OUT",
    "probe": "probe {pre} --data {csv} --out OUT",
    "diff": "diff {pre} {ft} --plot OUT",
    "prompt": "prompt {pre} --dataset {csv} --out OUT",
    "import": "import {tok} --out OUT",
    "export": "export {ft} --out OUT",
    "word2vec train": "word2vec train --corpus {corpus} --out OUT",
    "word2vec plot": "word2vec plot {vectors} --out OUT",
    "word2vec bias": "word2vec bias {vectors} --out OUT",
    "word2vec export": "word2vec export {vectors} --out OUT",
    "word2vec debias": "word2vec debias {vectors} --out OUT",
    "study": "study {pre} --data {csv} --out OUT",
    "search": "search --init {pre} --train-file {csv} --out OUT",
    "report": "report {ft} --out OUT",
    "demo": "demo --out OUT",
}


def leaves(parser, path=()):
    """(command, its parser) for every command of the CLI."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
    for action in subs:
        for name, child in action.choices.items():
            yield from leaves(child, (*path, name))


def string_flags(parser):
    return [
        a
        for a in parser._actions
        if a.nargs != 0 and a.dest != "help" and a.type in (None, str) and not a.choices
    ]


@pytest.fixture
def world(tmp_path):
    """Inputs of every kind: runs (copies of runs older code made), a tokenizer, data files, vectors."""
    shutil.copytree(OLD_RUNS / "pretrained", tmp_path / "pre")
    shutil.copytree(OLD_RUNS / "finetuned", tmp_path / "ft")
    (tmp_path / "ft" / "evaluation.md").write_text("# the run's own evaluation\n")
    tok = tmp_path / "tok"
    tok.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tmp_path / "pre" / "final" / name, tok / name)
    (tmp_path / "corpus.txt").write_text("a line of text\nanother line\n")
    (tmp_path / "data.csv").write_text("text,label\ngood,1\nbad,0\n")
    (tmp_path / "lines.txt").write_text("good\n")
    (tmp_path / "texts.json").write_text('[{"text": "the cat"}]\n')
    (tmp_path / "vectors.txt").write_text("2 2\nthe 0.1 0.2\ncat 0.3 0.4\n")
    (tmp_path / "link").symlink_to(tmp_path / "ft")
    (tmp_path / "glue_data" / "SST-2").mkdir(parents=True)
    for split in ("train", "dev"):
        (tmp_path / "glue_data" / "SST-2" / f"{split}.tsv").write_text("sentence\tlabel\ngood\t1\nbad\t0\n")
    names = {"corpus": "corpus.txt", "csv": "data.csv", "lines": "lines.txt", "texts": "texts.json"}
    paths = {k: tmp_path / v for k, v in names.items()}
    return {
        **paths,
        "pre": tmp_path / "pre",
        "ft": tmp_path / "ft",
        "tok": tok,
        "vectors": tmp_path / "vectors.txt",
        "glue": tmp_path / "glue_data",
    }


def snapshot(root):
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
        for p in sorted(root.rglob("*"))
    }


def targets(argv, world):
    """Outputs that would lose an input: each input, its children (and one level below), what holds it,
    the same through a symlink, and the side files that land on one."""
    found = set()
    for value in argv:
        path = Path(value)
        if not path.exists() or path == world["ft"].parent:
            continue
        found |= {path, path.parent}
        if path.is_dir():
            for child in path.iterdir():
                found.add(child)
                found |= set(child.iterdir()) if child.is_dir() else set()
    if str(world["ft"]) in argv:
        found.add(world["ft"].parent / "link" / "config.yaml")
    return sorted(found)


def test_every_command_and_every_path_flag_is_declared():
    """A flag that takes a path is an output (OUTPUT_DESTS), an input (INPUT_DESTS) or named as not a
    path; every command with an output is enumerated below."""
    parser = build_parser()
    writers = set()
    for command, leaf in leaves(parser):
        for action in string_flags(leaf):
            assert action.dest in OUTPUT_DESTS + INPUT_DESTS + NOT_PATHS, (command, action.dest)
            writers |= {command} if action.dest in OUTPUT_DESTS else set()
    assert writers == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_output_may_write_over_an_input(command, world, tmp_path, capsys):
    template = COMMANDS[command].format(**world).split()
    cases = targets(template, world)
    if command == "embed":  # OUT.json, its sentences, over the data it reads
        cases.append(world["texts"].with_suffix(".npy"))
    if command == "report":  # OUT.md beside it, over the run's own evaluation.md
        cases.append(world["ft"] / "evaluation.html")
    assert cases or command == "demo"
    for out in cases:
        before = snapshot(tmp_path)
        argv = [str(out) if a == "OUT" else a for a in template]
        for extra in ([], ["--overwrite"]) if "--overwrite" in _flags(command) else ([],):
            code, _, err = run(capsys, *argv, *extra)
            assert_one_line_error(code, err, "nothing was changed")
            assert snapshot(tmp_path) == before, (argv, extra)


def test_overwrite_replaces_only_what_warmstart_made(world, tmp_path, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("a user's own notes\n")
    git = tmp_path / "repo" / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    for command, line in COMMANDS.items():
        if "--overwrite" not in _flags(command):
            continue
        for folder in (notes, git):
            before = snapshot(tmp_path)
            argv = [str(folder) if a == "OUT" else a for a in line.format(**world).split()]
            code, _, err = run(capsys, *argv, "--overwrite")
            assert_one_line_error(code, err, "did not make", "nothing was changed")
            assert snapshot(tmp_path) == before, command


def _flags(command):
    leaf = dict(leaves(build_parser()))[command]
    return {s for a in leaf._actions for s in a.option_strings}


def test_two_writers_of_one_output_the_second_is_refused(world, tmp_path, capsys):
    """A claim on an output is held by a live process; a second process is refused until it ends."""
    import subprocess
    import sys

    out = tmp_path / "export"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from warmstart.outputs import claim; claim(sys.argv[1]); "
         "print('held', flush=True); time.sleep(60)", str(out)],
        stdout=subprocess.PIPE, text=True, env=os.environ.copy(),
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        code, _, err = run(capsys, "export", world["ft"], "--out", out)
        assert_one_line_error(code, err, "in use", "another warmstart process")
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
    from warmstart.outputs import claim, release_all

    claim(out)  # its process is gone, and its claim with it
    release_all()


def test_an_output_written_inside_a_run_may_be_written_again(world, capsys):
    """A new name inside an input run is allowed, noted in the run's marker once written, and may then be
    rewritten by the next call; the run's own files stay refused."""
    ft = world["ft"]
    for _ in range(2):
        code, _, err = run(capsys, "report", ft, "--out", ft / "summary.html")
        assert code == 0, err
    assert "summary.md" in (ft / ".warmstart").read_text()
    code, _, err = run(capsys, "report", ft, "--out", ft / "config.html")  # new names: allowed
    assert code == 0, err
    code, _, err = run(capsys, "fill-mask", world["pre"], "--bias", "--out", world["pre"] / "config.yaml")
    assert_one_line_error(code, err, "would write over config.yaml inside the RUN")


def test_every_plot_a_report_writes_is_declared():
    """report/ names its figures plot_path(out, NAME): each NAME is a side file the guard knows."""
    import re

    from warmstart.cli.outputs import REPORT_PLOTS

    source = "".join(p.read_text() for p in (Path(__file__).parents[2] / "src/warmstart/report").glob("*.py"))
    names = set(re.findall(r'plot_path\([^"\n]*"(\w+)"', source))
    assert names and names <= set(REPORT_PLOTS), names - set(REPORT_PLOTS)
