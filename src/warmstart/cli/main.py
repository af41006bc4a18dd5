"""Command line: each subcommand parses its flags and calls one function. Nothing else lives here.

The subcommands are a table: each module of cli/ has an ``add_<name>(sub)`` per command (or group of
commands) that registers its parser and handler; ``main`` parses, dispatches, and turns the errors a user
can fix into one line and exit code 2, and Ctrl+C at any moment (the first second's imports included: this
module imports nothing heavy) into one line and exit code 130. The helpers the modules share are in
cli/common.py.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import warnings

from warmstart.errors import Stopped, WarmstartError
from warmstart.paths import refuse_replacing_home

COMMANDS = [  # (cli module, its add_<name> function), in the order `warmstart --help` lists them
    ("data", "add_data"),
    ("data", "add_tokenizer"),
    ("data", "add_prepare"),
    ("train", "add_pretrain"),
    ("train", "add_finetune"),
    ("evaluate", "add_evaluate"),
    ("evaluate", "add_predict"),
    ("suite", "add_suite"),
    ("features", "add_embed"),
    ("features", "add_fill_mask"),
    ("features", "add_probe"),
    ("diff", "add_diff"),
    ("generate", "add_generate"),
    ("generate", "add_prompt"),
    ("hub", "add_import"),
    ("hub", "add_export"),
    ("word2vec", "add_word2vec"),
    ("serve", "add_serve"),
    ("study", "add_study"),
    ("search", "add_search"),
    ("study", "add_report"),
    ("study", "add_demo"),
]


def build_parser():
    """The parser of every command (imported here, not at the top: a Ctrl+C meanwhile is caught)."""
    from warmstart import __version__
    from warmstart.cli.common import Parser
    from warmstart.cli.int_flags import bound_int_flags

    parser = Parser(prog="warmstart", description="Pretrain, then finetune, and measure it.")
    parser.add_argument("--version", action="version", version=f"warmstart {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module, add in COMMANDS:
        getattr(importlib.import_module(f"warmstart.cli.{module}"), add)(sub)
    bound_int_flags(parser)
    _name_leaves(parser, [])
    return parser


def _name_leaves(parser, path: list[str]) -> None:
    """Each command's parser sets ``command_path`` ("word2vec bias"), by which its declared outputs are
    found, and ``flag_names`` ({dest: "--init" or "RUN"}), by which its errors name them."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs and path:
        names = {
            a.dest: a.option_strings[0] if a.option_strings else (a.metavar or a.dest.upper())
            for a in parser._actions
        }
        parser.set_defaults(command_path=" ".join(path), flag_names=names)
    for action in subs:
        for name, child in action.choices.items():
            _name_leaves(child, [*path, name])


def _print_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr)


def _run(args) -> int:
    """The chosen command's function; a problem the user can fix is one line and exit code 2."""
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _print_warning
            refuse_replacing_home(getattr(args, "out", None), getattr(args, "overwrite", False))
            written = _guard_outputs(args)
            if getattr(args, "run", None) and args.command != "export":  # a transformers directory: imported
                from warmstart.hub.on_the_fly import warmstart_dir

                args.run = warmstart_dir(args.run)
            args.func(args)
            from warmstart.outputs import record

            record(written)  # outputs written inside an input directory: noted there, may be written again
        from warmstart.train.distributed import finish

        finish()  # torchrun: every rank done before any tears its process group down (a lost peer: below)
    except WarmstartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Stopped as e:  # SIGTERM/SIGINT: checkpoint written; 128 + signal number (train/signals.py)
        print(e, file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return interrupted()
    except Exception as e:  # noqa: BLE001 - every error ends in one line (cli/guard.py)
        return _one_line(e, getattr(args, "command", "") or "")
    finally:
        from warmstart.outputs import release_all

        release_all()
    return 0


def _guard_outputs(args) -> list:
    """Interrupted replacements put right, then the command's declared outputs checked against its inputs
    and claimed (warmstart/outputs, cli/outputs.py), before the command does anything."""
    from warmstart import outputs
    from warmstart.cli.outputs import declared

    outputs.recover_all()
    written, read, rewrites = declared(args)
    return outputs.guard(written, read, rewrites=rewrites, overwrite=bool(getattr(args, "overwrite", False)))


def _one_line(e: Exception, command: str) -> int:
    """A full disk, a lost torchrun peer or a known input problem: one line, exit 2; a bug: one line and the
    traceback in a log file, exit 1."""
    from warmstart.atomic import disk_full, disk_full_error
    from warmstart.cli import guard
    from warmstart.train.distributed import failure

    if isinstance(e, OSError) and disk_full(e):
        print(f"error: {disk_full_error(e.filename or 'a file')}", file=sys.stderr)
        return 2
    lost = failure(e) if isinstance(e, RuntimeError) else None  # torchrun: another process died or hung
    line = str(lost) if lost is not None else guard.known(e)
    if line is not None:
        print(f"error: {line}", file=sys.stderr)
        return 2
    print(f"error: {guard.unexpected(e, command)}", file=sys.stderr)
    return 1


def interrupted() -> int:
    """Ctrl+C: one line and 130 (128 + SIGINT). A second Ctrl+C while Python shuts down ends the process
    as the signal does, without a traceback."""
    with contextlib.suppress(ValueError):  # not the main thread: its handler stays
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    print("interrupted", file=sys.stderr)
    return 130


@contextlib.contextmanager
def _held_interrupts():
    """A Ctrl+C while the parser imports torch and the rest is held (a list that gets the signal) and taken
    after: a KeyboardInterrupt raised inside a C++ module initialiser aborts the process instead."""
    caught: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    except ValueError:  # not the main thread
        yield caught
        return
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # in the imports of building the parser, or anywhere outside _run
        return interrupted()


def _main(argv: list[str] | None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    with _held_interrupts() as caught:
        parser = build_parser()
    if caught:
        raise KeyboardInterrupt
    args, extra = parser.parse_known_args(argv)
    # KEY=VALUE overrides may come anywhere on the line; argparse only collects those before the options
    if hasattr(args, "overrides"):
        args.overrides = list(args.overrides) + [x for x in extra if "=" in x and not x.startswith("-")]
        extra = [x for x in extra if x not in args.overrides]
    if extra:
        from warmstart.cli.common import leaf_parser, trailing_positionals, unknown_arguments

        leaf = leaf_parser(parser, args)
        extra = trailing_positionals(leaf, args, extra)
    if extra:  # the chosen command's usage, and the flag it has that was probably meant
        leaf.error(unknown_arguments(leaf, extra))
    return _run(args)
