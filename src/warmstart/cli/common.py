"""What every subcommand module shares: the parser class, config-backed flags, data options, input files."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from warmstart.errors import WarmstartError

SAME_FLAG = "--data and --dataset are the same flag"
TYPES = {"int": int, "float": float}


class Parser(argparse.ArgumentParser):
    """No prefix matching (``--epoch`` is not ``--epochs``), and an unknown subcommand gets a suggestion.

    Subparsers are of the parser's own class, so every level of ``warmstart`` behaves the same."""

    def __init__(self, *args, allow_abbrev: bool = False, **kwargs):
        super().__init__(*args, allow_abbrev=allow_abbrev, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        self.typed = list(sys.argv[1:] if args is None else args)  # for error(): the flags typed here
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        """One line, no usage block: what is wrong and where the flags are listed. A required flag missing
        beside flags this command lacks (``--files`` for ``--corpus``) names those too, with their hints."""
        if message.startswith("the following arguments are required"):
            options = {s for action in self._actions for s in action.option_strings}
            typed = [x for x in getattr(self, "typed", []) if x.startswith("--")]
            unknown = [x for x in typed if x.split("=", 1)[0] not in options]
            if unknown:
                message += "; " + unknown_arguments(self, unknown)
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _check_value(self, action, value):
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            self.exit(2, unknown_command(self.prog, value, list(action.choices)) + "\n")
        super()._check_value(action, value)


def unknown_command(prog: str, typed: str, names: list[str]) -> str:
    """``error: unknown command 'pretrian'; did you mean pretrain?`` (nested: ``word2vec trian``)."""
    group = prog.partition(" ")[2]  # "" at the top, "word2vec" in `warmstart word2vec`
    where = f"{group} " if group else ""
    close = difflib.get_close_matches(typed, names, n=1)
    fix = f"did you mean {where}{close[0]}?" if close else f"choose one of: {', '.join(names)}"
    return f"error: unknown command '{where}{typed}'; {fix}"


def unknown_arguments(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """``unrecognized arguments: --epoch 1; did you mean --epochs?`` (``--learning_rate``: ``--lr``)."""
    options = [s for action in parser._actions for s in action.option_strings]
    flags = [x for x in extra if x.startswith("--")]
    said = {x: HF_SAID[_name(x)] for x in flags if _name(x) in HF_SAID}
    close = [
        match
        for x in flags
        if x not in said
        for match in meant(parser, x, options)
        or difflib.get_close_matches(x.split("=", 1)[0], options, n=1, cutoff=0.75)
    ]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    hint += "".join(f"; {x.split('=', 1)[0]}: {text}" for x, text in said.items())
    return f"unrecognized arguments: {' '.join(extra)}{hint}"


def _name(flag: str) -> str:
    return flag.split("=", 1)[0].lstrip("-").replace("-", "_")


# transformers' script flags that are warmstart flags rather than config keys
HF_FLAGS = {
    "overwrite_output_dir": "--overwrite",
    "resume_from_checkpoint": "--resume",
    "files": "--corpus",
    "vector_size": "--dim",
    "alpha": "--lr",
}  # fmt: skip (the last two: gensim's Word2Vec)

# transformers' flags with no flag or key of the same name here: what to do instead (a close spelling such
# as --strategy for --save_strategy would mislead)
HF_SAID = {
    "use_cpu": "pass train.device=cpu",
    "no_cuda": "pass train.device=cpu",
    "peft": "pass --strategy lora (strategy.lora_rank=8 ...)",
    "eval_strategy": "pass evals_per_epoch=N, or train.eval_every=STEPS",
    "evaluation_strategy": "pass evals_per_epoch=N, or train.eval_every=STEPS",
    "save_strategy": "pass train.save_every=STEPS (the best model is kept whatever it is)",
    "load_best_model_at_end": "not needed: the best model is always kept in RUN/best and tested",
    "do_train": "not needed: a run trains, validates and tests",
    "do_eval": "not needed: a run trains, validates and tests",
    "do_predict": "not needed: a run is tested on its test split (warmstart predict RUN for new text)",
    "push_to_hub": "no hub here: warmstart export RUN --out DIR writes a transformers directory to upload",
    "cache_dir": "set WARMSTART_CACHE=DIR in the environment",
    "num_labels": "not needed: the labels come from the data",
    "logging_dir": "not needed: TensorBoard logs are in RUN/tb",
    "pad_to_max_length": "not needed: batches are padded to their longest input",
    "optim": "the optimizer is AdamW: train.weight_decay, train.beta1, train.beta2, train.eps set it",
    "validation_split_percentage": "a file without a validation split gives one, carved by hash (10% of "
    "labeled rows, 2% of a corpus)",
    "dataloader_num_workers": "not needed: batches are built in memory from the tokenized splits",
    "sg": "pass --model skipgram (gensim's sg=1) or --model cbow (sg=0)",
    "hs": "hierarchical softmax is not built here: negative sampling (--negative) trains the vectors",
}


def meant(parser: argparse.ArgumentParser, typed: str, options: list[str]) -> list[str]:
    """What a transformers user meant by ``--typed``: this command's flag for the same setting (``--lr`` for
    ``--learning_rate``), else its config key to give as KEY=VALUE (``train.grad_accum=N``); [] for none."""
    from warmstart.config import same_setting

    name = _name(typed)
    if name in HF_FLAGS:
        return [HF_FLAGS[name]] if HF_FLAGS[name] in options else []
    keys = getattr(parser, "config_keys", {})
    same = same_setting(name, list(keys))
    if not same:
        return []
    flag = getattr(parser, "flag_of_key", {}).get(same[0])
    return [flag or f"{same[0]}={'true' if keys[same[0]] == 'bool' else 'VALUE'}"]


def leaf_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the command that was chosen, e.g. the one of `warmstart word2vec train`."""
    while True:
        subs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if subs is None or getattr(args, subs.dest, None) not in subs.choices:
            return parser
        parser = subs.choices[getattr(args, subs.dest)]


def trailing_positionals(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> list:
    """Texts typed after an option (``predict RUN --head sst2 "a text"``) go to the command's list of texts:
    argparse fills a ``nargs="*"`` positional from the words before the first option only, and leaves the
    rest unrecognised. Nothing moves while a flag is among the rest (that stays an error). The rest left."""
    lists = [
        a for a in parser._actions if not a.option_strings and a.nargs in ("*", "+") and a.dest != "overrides"
    ]
    if len(lists) != 1 or any(x.startswith("-") and len(x) > 1 for x in extra):
        return extra
    dest = lists[0].dest
    setattr(args, dest, list(getattr(args, dest) or []) + list(extra))
    return []


def raw_epilog(p: argparse.ArgumentParser, text: str) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = text


def config_rows(cls: type, defaults: dict | None = None) -> dict[str, tuple[str, object, str]]:
    """dotted key -> (type name, default, help) of a config class, with the command's own defaults."""
    from warmstart.config import field_help

    return {key: (tp, default, text) for key, tp, default, text in field_help(cls, defaults)}


def dest_of(flag: str, kw: dict) -> str:
    return kw.get("dest") or flag.lstrip("-").replace("-", "_")


def config_flags(p: argparse.ArgumentParser, rows: dict, table: list[tuple[str, str, dict]]) -> None:
    """Flags that set config keys: [(flag, dotted key, add_argument keywords)]. Type and help come from the
    config field (its help, key and the default this command runs with); ``also`` adds spellings."""
    p.config_keys = {key: tp for key, (tp, _, _) in rows.items()}  # what an unknown flag meant (``meant``)
    p.flag_of_key = {key: flag for flag, key, _ in table}
    for flag, key, kw in table:
        kw = dict(kw)
        tp, default, text = rows[key]
        also = kw.pop("also", ())
        if tp == "bool":
            kw.setdefault("action", "store_true")
        else:
            kw.setdefault("type", TYPES.get(tp.rstrip("?"), str))
        unset = default is None or default is False or default in ("", [])  # 0 is a default worth showing
        shown = key if unset else f"{key}, default {default!r}"
        note = f"; {SAME_FLAG}" if "--data" in (flag, *also) else ""
        kw["dest"] = dest_of(flag, kw)
        p.add_argument(flag, *also, help=f"{text} ({shown}){note}".replace("%", "%%"), **kw)


def flag_keys(table: list[tuple[str, str, dict]]) -> list[tuple[str, str]]:
    """[(namespace attribute, dotted key)] of a ``config_flags`` table."""
    return [(dest_of(flag, kw), key) for flag, key, kw in table]


def flags(a: argparse.Namespace, table: list[tuple[str, str]]) -> dict:
    """Nested config dict from the flags that were given: [(attribute, dotted key)]."""
    out: dict = {}
    for key, dotted in table:
        value = getattr(a, key)
        if value is not None and value is not False:
            node = out
            *sections, leaf = dotted.split(".")
            for section in sections:
                node = node.setdefault(section, {})
            node[leaf] = value
    return out


def data_flag(p: argparse.ArgumentParser, help: str, dest: str = "data", required: bool = True) -> None:
    """``--data`` and ``--dataset``: one flag with both spellings, in the attribute ``dest`` the command reads
    (the flag of that name is the one shown first)."""
    names = ("--data", "--dataset") if dest == "data" else ("--dataset", "--data")
    p.add_argument(*names, dest=dest, metavar="DATASET", required=required, help=f"{help}; {SAME_FLAG}")


SPLIT_NAMES = ("train", "validation", "test")


def split_file_flags(p: argparse.ArgumentParser) -> None:
    """``--train-file``, ``--validation-file``, ``--test-file``: the user's own splits, helped as finetune's
    data.*_file keys."""
    from warmstart.data.options import FinetuneDataConfig

    rows = config_rows(FinetuneDataConfig)
    for split in SPLIT_NAMES:
        p.add_argument(f"--{split}-file", metavar="FILE", help=rows[f"{split}_file"][2].replace("%", "%%"))


def split_files(a: argparse.Namespace) -> dict[str, str]:
    """{split: file} of the split-file flags given."""
    return {s: getattr(a, f"{s}_file") for s in SPLIT_NAMES if getattr(a, f"{s}_file", None)}


def add_text_options(
    p: argparse.ArgumentParser, text_default: str | None = "text", text_help: str = ""
) -> None:
    p.add_argument(
        "--text-column",
        default=text_default,
        help="column with the text in csv/tsv/jsonl/parquet files" + text_help,
    )
    p.add_argument(
        "--txt-mode",
        default="line",
        choices=["line", "blank"],
        help=".txt files: one document per line, or blank-line separated documents",
    )
    p.add_argument("--split-seed", type=int, default=0, help="seed of the train/validation/test split")


def data_options(a) -> object:
    from warmstart.data.dataset import DataOptions

    return DataOptions(
        text_column=a.text_column,
        text_pair_column=getattr(a, "text_pair_column", None),
        label_column=getattr(a, "label_column", "label"),
        split_seed=a.split_seed,
    )


def open_input(path: str):
    """The lines of an input file, as data/ reads text: a byte-order mark dropped, each line bounded."""
    from warmstart.data.lines import Lines
    from warmstart.data.readers import check_text

    if not Path(path).is_file():
        raise WarmstartError(f"no such input file: {path}", "pass an existing file, or - for stdin")
    check_text(Path(path))
    return Lines(path)


def head_flag(p: argparse.ArgumentParser) -> None:
    """``--head NAME``: one head of a multitask encoder run, used as the single-task model it is."""
    p.add_argument(
        "--head",
        metavar="NAME",
        help="a multitask encoder run: the head to use (its dataset's name, e.g. rotten-tomatoes), which "
        "then behaves as the single-task model of its task",
    )
