"""The CLI's last line of defence (issue 22): an exception no check foresaw, in any command, prints one line
(with the path of a log holding the traceback) and exits 1; known classes of input problems print their own
line and exit 2. Never a traceback on the terminal."""

import errno
from argparse import Namespace
from pathlib import Path

import pytest

from tests.helpers.cli import run
from warmstart.cli.main import _run, build_parser


def leaf_commands(parser, prefix=()):
    """Every runnable command line: ("pretrain",), ("word2vec", "train"), ..."""
    subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    if not subs:
        yield prefix
        return
    for name, child in subs[0].choices.items():
        yield from leaf_commands(child, (*prefix, name))


COMMANDS = sorted(leaf_commands(build_parser()))


def test_every_command_is_covered():
    assert len(COMMANDS) >= 20 and ("pretrain",) in COMMANDS and ("word2vec", "train") in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_unexpected_error_in_any_command_is_one_line_and_a_log(command, capsys):
    def boom(args):
        raise ValueError("injected failure " + "x" * 500)

    code = _run(Namespace(func=boom, command=command[0]))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: warmstart {command[0]} failed unexpectedly (ValueError: injected")
    assert len(lines[0]) < 500  # the message is quoted short
    log = Path(lines[0].split("the traceback is in ")[1].split(";")[0])
    text = log.read_text()
    assert "Traceback" in text and "injected failure" in text and "boom" in text


@pytest.mark.parametrize(
    "exc, needle",
    [
        (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
        (OSError(errno.ENAMETOOLONG, "File name too long", "x" * 300), "file name is too long"),
        (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), "cannot be encoded"),
        (MemoryError(), "not enough memory"),
        (FileExistsError(errno.EEXIST, "File exists", "out.csv"), "out.csv already exists as a file"),
        (NotADirectoryError(errno.ENOTDIR, "Not a directory", "a.txt/b"), "through a file"),
        (OSError(errno.EROFS, "Read-only file system", "/ro/x"), "read-only"),
    ],
)
def test_known_classes_are_input_problems(exc, needle, capsys):
    def raise_it(args):
        raise exc

    code = _run(Namespace(func=raise_it, command="pretrain"))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_a_yaml_nested_thousands_deep_is_one_line(tmp_path, capsys):
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    code, _, err = run(capsys, "finetune", "--config", deep, "--init", tmp_path, "--dataset", "x")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_an_output_name_too_long_is_one_line(tmp_path, capsys, wiki_extracts):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(wiki_extracts[:50]))
    code, _, err = run(
        capsys,
        "tokenizer",
        "train",
        "--corpus",
        corpus,
        "--vocab-size",
        "200",
        "--out",
        tmp_path / ("n" * 300),
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
