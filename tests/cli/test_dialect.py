"""One dialect across the CLI: one dataset flag, no prefix matching, each command's own defaults in --help,
suggestions for a mistyped command or config key (transformers' names included). In process, no training."""

from __future__ import annotations

import re

import pytest

from warmstart.cli.common import SAME_FLAG
from warmstart.cli.main import build_parser, main
from warmstart.commands.finetune import resolve
from warmstart.train.loop import TrainConfig


def fails(capsys, *argv) -> str:
    """The one stderr line of a command that exits with code 2 (argparse's usage lines aside)."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith(("usage:", " "))]
    assert len(lines) == 1, err
    return lines[0]


def help_of(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def subparsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(getattr(action, "choices", None), dict):
            for sub in action.choices.values():
                yield from subparsers(sub)


# ------------------------------------------------------------------------- 2. --data and --dataset
DATA_COMMANDS = [  # (argv before the flag, attribute, argv after)
    (["evaluate", "run"], "data", []),
    (["embed", "run"], "data", ["--out", "x.npy"]),
    (["probe", "run"], "data", ["--out", "p"]),
    (["study", "run"], "data", ["--out", "s"]),
    (["finetune"], "dataset", []),
    (["prompt", "run"], "dataset", []),
]


@pytest.mark.parametrize("before, dest, after", DATA_COMMANDS, ids=[c[0][0] for c in DATA_COMMANDS])
@pytest.mark.parametrize("flag", ["--data", "--dataset"])
def test_data_and_dataset_are_one_flag(before, dest, after, flag):
    args = build_parser().parse_args([*before, flag, "rotten-tomatoes", *after])
    assert getattr(args, dest) == "rotten-tomatoes"
    assert not hasattr(args, {"data": "dataset", "dataset": "data"}[dest])


@pytest.mark.parametrize("command", [c[0][0] for c in DATA_COMMANDS])
def test_help_says_once_that_the_two_spellings_are_one_flag(capsys, command):
    out = " ".join(help_of(capsys, command).split())
    assert out.count(SAME_FLAG) == 1
    assert "--data DATASET, --dataset DATASET" in out or "--dataset DATASET, --data DATASET" in out


# ---------------------------------------------------------------------------- 3. no prefix matching
def test_no_parser_matches_prefixes():
    parsers = list(subparsers(build_parser()))
    assert len(parsers) > 20
    assert all(p.allow_abbrev is False for p in parsers), [p.prog for p in parsers if p.allow_abbrev]


def test_a_prefix_of_a_flag_is_an_unknown_flag(capsys):
    line = fails(capsys, "finetune", "--init", "r", "--dataset", "d", "--epoch", "1")
    assert "unrecognized arguments: --epoch" in line
    assert "did you mean --epochs?" in line


@pytest.mark.parametrize(
    "command, typed, hint",
    [
        ("finetune", "--learning_rate", "--lr"),
        ("finetune", "--num_train_epochs", "--epochs"),
        ("finetune", "--per_device_train_batch_size", "--batch-size"),
        ("finetune", "--model_name_or_path", "--init"),
        ("finetune", "--output_dir", "--out"),
        ("finetune", "--overwrite_output_dir", "--overwrite"),
        ("finetune", "--gradient_accumulation_steps", "train.grad_accum=VALUE"),
        ("finetune", "--weight_decay", "train.weight_decay=VALUE"),
        ("finetune", "--bf16", "train.bf16=true"),
        ("pretrain", "--max_seq_length", "--seq-len"),
        ("pretrain", "--dataset_name", "--corpus"),
        ("finetune", "--max_train_samples", "data.train_limit=VALUE"),
        ("finetune", "--max_eval_samples", "data.validation_limit=VALUE"),
        ("finetune", "--lora_r", "strategy.lora_rank=VALUE"),
        ("finetune", "--torch_compile", "train.compile=true"),
        ("finetune", "--label_smoothing_factor", "task.label_smoothing=VALUE"),
    ],
)
def test_a_transformers_flag_names_the_flag_or_key_it_means_here(capsys, command, typed, hint):
    """A transformers (TrainingArguments / run_glue.py) habit gets this command's own spelling."""
    line = fails(capsys, command, "--out", "o", typed, "3")
    assert f"unrecognized arguments: {typed}" in line and line.endswith(
        f"did you mean {hint}? (see warmstart {command} --help)"
    )


@pytest.mark.parametrize(
    "typed, said",
    [
        ("--save_strategy", "pass train.save_every=STEPS"),  # not "did you mean --strategy?"
        ("--eval_strategy", "pass evals_per_epoch=N, or train.eval_every=STEPS"),
        ("--load_best_model_at_end", "not needed: the best model is always kept in RUN/best and tested"),
        ("--use_cpu", "pass train.device=cpu"),
        ("--peft", "pass --strategy lora"),
        ("--optim", "the optimizer is AdamW: train.weight_decay"),
    ],
)
def test_a_transformers_flag_with_no_twin_says_what_to_do(capsys, typed, said):
    line = fails(capsys, "finetune", "--out", "o", typed, "--learning_rate", "3")
    assert "did you mean --lr?" in line and f"; {typed}: {said}" in line and "--strategy?" not in line


def test_gensim_flags_name_word2vecs_own(capsys):
    line = fails(capsys, "word2vec", "train", "--corpus", "a.txt", "--vector_size", "50", "--sg", "1")
    assert "did you mean --dim?" in line and "; --sg: pass --model skipgram (gensim's sg=1)" in line


def test_a_missing_flag_beside_a_flag_meant_for_it_names_both(capsys):
    """`tokenizer train --files a.txt` (the tokenizers library's word) said only that --corpus is required."""
    line = fails(capsys, "tokenizer", "train", "--files", "a.txt", "--vocab_size", "500", "--out", "t")
    assert line.startswith("warmstart tokenizer train: error: the following arguments are required: --corpus")
    assert "unrecognized arguments: --files --vocab_size; did you mean --corpus, --vocab-size?" in line


PARSE_ERRORS = [["finetune", "--epoch", "1"], ["pretrain", "--steps"], ["word2vec", "train", "--x"]]


@pytest.mark.parametrize("argv", PARSE_ERRORS)
def test_a_parse_error_is_one_line_without_the_usage_block(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "error:" in err and "--help" in err and "usage:" not in err


# ----------------------------------------------------------------------- 4. each command's defaults
def shown_defaults(out: str) -> tuple[dict[str, str], dict[str, str]]:
    """({key: default} of the config-key table, {key: default} of the flags' help) of a --help."""
    table = dict(re.findall(r"^  (train\.\w+) .*\[\w+\??, default (.+)\]$", out, flags=re.M))
    flags = dict(re.findall(r"\((train\.\w+), default ([^)]+)\)", " ".join(out.split())))
    return table, flags


def test_finetune_help_shows_finetuning_defaults(capsys):
    table, flags = shown_defaults(help_of(capsys, "finetune"))
    train = resolve(None, {}, []).train  # what a finetune runs with
    for key in ("lr", "beta2", "eps", "warmup_ratio", "weight_decay", "steps", "batch_size"):
        assert float(table[f"train.{key}"]) == getattr(train, key), key
    assert float(flags["train.lr"]) == train.lr == 2e-5
    assert (train.beta2, train.eps, train.warmup_ratio) == (0.999, 1e-8, 0.1)


def test_pretrain_help_shows_pretraining_defaults(capsys):
    table, flags = shown_defaults(help_of(capsys, "pretrain"))
    train = TrainConfig()
    for key in ("lr", "beta2", "eps", "warmup_ratio", "steps", "batch_size"):
        assert float(table[f"train.{key}"]) == getattr(train, key), key
    assert float(flags["train.lr"]) == train.lr == 5e-4
    assert int(flags["train.steps"]) == train.steps == 1000


def test_flag_help_is_the_config_fields_help(capsys):
    from warmstart.config import field_help
    from warmstart.word2vec.run import Word2VecRunConfig

    out = " ".join(help_of(capsys, "word2vec", "train").split())
    for key, _, default, text in field_help(Word2VecRunConfig):
        if key in ("word2vec.dim", "word2vec.window", "word2vec.epochs"):
            assert f"{text} ({key}, default {default!r})" in out


# -------------------------------------------------------------------- 5. a mistyped command's fix
@pytest.mark.parametrize(
    "argv, typed, meant",
    [
        (["pretrian"], "pretrian", "pretrain"),
        (["word2vec", "trian"], "word2vec trian", "word2vec train"),
        (["data", "lsit"], "data lsit", "data list"),
        (["tokenizer", "trian"], "tokenizer trian", "tokenizer train"),
        (["finetun", "--lr", "1"], "finetun", "finetune"),
    ],
)
def test_unknown_command_names_the_closest(capsys, argv, typed, meant):
    line = fails(capsys, *argv)
    assert line == f"error: unknown command '{typed}'; did you mean {meant}?"


def test_unknown_command_without_a_close_one_lists_them(capsys):
    line = fails(capsys, "xyzzy")
    assert line.startswith("error: unknown command 'xyzzy'; choose one of: data, tokenizer")


# ----------------------------------------------------------- 6. config keys by transformers' names
FT = ["finetune", "--init", "r", "--dataset", "d"]


@pytest.mark.parametrize(
    "argv, typed, meant",
    [
        ([*FT, "train.learning_rate=1e-4"], "train.learning_rate", "train.lr"),
        ([*FT, "learning_rate=1e-4"], "learning_rate", "train.lr"),
        ([*FT, "num_train_epochs=2"], "num_train_epochs", "epochs"),
        ([*FT, "per_device_train_batch_size=8"], "per_device_train_batch_size", "train.batch_size"),
        ([*FT, "gradient_accumulation_steps=2"], "gradient_accumulation_steps", "train.grad_accum"),
        ([*FT, "max_steps=10"], "max_steps", "train.steps"),
        ([*FT, "seed=1"], "seed", "train.seed"),
        ([*FT, "weight_decay=0"], "weight_decay", "train.weight_decay"),
        ([*FT, "warmup_ratio=0.1"], "warmup_ratio", "train.warmup_ratio"),
        ([*FT, "warmup_steps=10"], "warmup_steps", "train.warmup_steps"),
        ([*FT, "lr_scheduler_type=cosine"], "lr_scheduler_type", "train.schedule"),
        ([*FT, "adam_beta1=0.9"], "adam_beta1", "train.beta1"),
        ([*FT, "adam_beta2=0.99"], "adam_beta2", "train.beta2"),
        ([*FT, "adam_epsilon=1e-8"], "adam_epsilon", "train.eps"),
        ([*FT, "train.lrr=1e-4"], "train.lrr", "train.lr"),
        (["pretrain", "train.learning_rate=1e-4"], "train.learning_rate", "train.lr"),
        (["pretrain", "num_train_epochs=1"], "num_train_epochs", None),
        (["word2vec", "train", "learning_rate=0.1"], "learning_rate", "word2vec.lr"),
        (["word2vec", "train", "num_train_epochs=1"], "num_train_epochs", "word2vec.epochs"),
    ],
)
def test_unknown_config_key_suggests_the_real_one(capsys, argv, typed, meant):
    line = fails(capsys, *argv)
    assert line.startswith(f"error: unknown config key '{typed}'; ")
    if meant:
        assert line.endswith(f"; did you mean {meant}?")


# ------------------------------------------------------------------ 7. help names only real flags
def test_word2vec_train_help_mentions_no_config_flag(capsys):
    out = help_of(capsys, "word2vec", "train")
    assert "--config" not in out
    assert "config keys (set with key=value)" in out


@pytest.mark.parametrize("argv", [["pretrain"], ["finetune"], ["generate"], ["prompt"]])
def test_commands_with_a_config_flag_say_so(capsys, argv):
    out = help_of(capsys, *argv)
    assert "--config CONFIG" in out and "or in a --config YAML file" in out
