"""Command line: each subcommand parses its flags and calls one function. Nothing else lives here.

The subcommands are a table: each module of cli/ has an ``add_<name>(sub)`` per command (or group of
commands) that registers its parser and handler; ``main`` parses, dispatches, and turns the errors a user
can fix into one line and exit code 2. The helpers the modules share are in cli/common.py.
"""

from __future__ import annotations

import os
import sys
import warnings

from warmstart.atomic import disk_full, disk_full_error
from warmstart.cli import data, diff, evaluate, features, generate, guard, hub, serve, study, train, word2vec
from warmstart.cli.common import Parser, leaf_parser, unknown_arguments
from warmstart.errors import Stopped, WarmstartError

COMMANDS = [  # in the order `warmstart --help` lists them
    data.add_data,
    data.add_tokenizer,
    data.add_prepare,
    train.add_pretrain,
    train.add_finetune,
    evaluate.add_evaluate,
    evaluate.add_predict,
    features.add_embed,
    features.add_fill_mask,
    features.add_probe,
    diff.add_diff,
    generate.add_generate,
    generate.add_prompt,
    hub.add_import,
    hub.add_export,
    word2vec.add_word2vec,
    serve.add_serve,
    study.add_study,
    study.add_report,
    study.add_demo,
]


def build_parser() -> Parser:
    from warmstart import __version__

    parser = Parser(prog="warmstart", description="Pretrain, then finetune, and measure it.")
    parser.add_argument("--version", action="version", version=f"warmstart {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def _print_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr)


def _run(args) -> int:
    """The chosen command's function; a problem the user can fix is one line and exit code 2."""
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _print_warning
            if getattr(args, "run", None) and args.command != "export":  # a transformers directory: imported
                from warmstart.hub.on_the_fly import warmstart_dir

                args.run = warmstart_dir(args.run)
            args.func(args)
        from warmstart.train.distributed import finish

        finish()  # torchrun: every rank done before any tears its process group down (a lost peer: below)
    except WarmstartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Stopped as e:  # SIGTERM/SIGINT: checkpoint written; 128 + signal number (train/signals.py)
        print(e, file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - every error ends in one line (cli/guard.py)
        return _one_line(e, getattr(args, "command", "") or "")
    return 0


def _one_line(e: Exception, command: str) -> int:
    """A full disk, a lost torchrun peer or a known input problem: one line, exit 2; a bug: one line and the
    traceback in a log file, exit 1."""
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


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # KEY=VALUE overrides may come anywhere on the line; argparse only collects those before the options
    if hasattr(args, "overrides"):
        args.overrides = list(args.overrides) + [x for x in extra if "=" in x and not x.startswith("-")]
        extra = [x for x in extra if x not in args.overrides]
    if extra:  # the chosen command's usage, and the flag it has that was probably meant
        leaf = leaf_parser(parser, args)
        leaf.error(unknown_arguments(leaf, extra))
    return _run(args)
