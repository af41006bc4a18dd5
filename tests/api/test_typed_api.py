"""The typed Python API (issue 37): the config dataclasses exported and taken where a section dict is, the
common settings as typed keywords (each one config key; given twice, an error naming both), unknown
keywords answered with Python keywords, errors that speak Python (never a --flag or --help), and a Run's
history, test metrics and ``open_run``."""

import json

import pandas as pd
import pytest
import yaml

import warmstart
from warmstart import config as C
from warmstart.api.python_errors import python_text, translate
from warmstart.api.settings import KEYWORDS
from warmstart.commands.finetune import FinetuneConfig
from warmstart.data.options import FinetuneDataConfig
from warmstart.errors import Stopped, WarmstartError
from warmstart.pretraining.config import PretrainConfig
from warmstart.tasks.base import TaskConfig
from warmstart.train.callbacks import StopTraining
from warmstart.train.loop import TrainConfig
from warmstart.train.strategies import StrategyConfig

QUIET = ["train.progress=false", "train.eval_batches=2"]


def test_the_config_classes_and_errors_are_exported():
    assert warmstart.FinetuneConfig is FinetuneConfig and warmstart.PretrainConfig is PretrainConfig
    assert warmstart.TrainConfig is TrainConfig and warmstart.TaskConfig is TaskConfig
    assert warmstart.StrategyConfig is StrategyConfig and warmstart.DataConfig is FinetuneDataConfig
    assert warmstart.WarmstartError is WarmstartError and warmstart.StopTraining is StopTraining
    assert warmstart.Interrupted is Stopped  # raised after SIGINT/SIGTERM once the checkpoint is written
    assert warmstart.open_run is warmstart.api.run.open_run
    assert {"FinetuneConfig", "Interrupted", "WarmstartError", "open_run"} <= set(dir(warmstart))


@pytest.mark.parametrize("command, cls", [("finetune", FinetuneConfig), ("pretrain", PretrainConfig)])
def test_every_typed_keyword_sets_a_key_the_config_has(command, cls):
    keys = set(C.all_keys(cls))
    missing = {name: key for name, key in KEYWORDS[command].items() if key not in keys}
    assert not missing, f"keywords of {command} naming no config key: {missing}"


def test_typed_keywords_a_config_object_and_dataclass_sections_reach_the_run(
    tiny_pretrained, rt_small, tmp_path
):
    class Logged:
        def __init__(self):
            self.records = []

        def on_log(self, step, record):
            self.records.append(record)

    logged = Logged()
    base = warmstart.FinetuneConfig(epochs=2.0, evals_per_epoch=2, train=warmstart.TrainConfig(clip_norm=0.5))
    run = warmstart.finetune(
        *QUIET, config=base, init=tiny_pretrained, data=pd.read_csv(rt_small), out=tmp_path / "ft",
        lr=1e-3, batch_size=16, max_length=32, seed=3, warmup_ratio=0.25, weight_decay=0.0, early_stopping=5,
        device="cpu", bf16=False, fp16=False, metric_for_best_model="macro_f1", greater_is_better=True,
        gradient_checkpointing=True, task="classification", strategy="full",
        callbacks=[logged],
    )  # fmt: skip
    saved = yaml.safe_load((tmp_path / "ft" / "config.yaml").read_text())
    train = saved["train"]
    assert train["lr"] == 1e-3 and train["batch_size"] == 16  # the keywords
    assert (train["warmup_ratio"], train["weight_decay"], train["early_stopping"]) == (0.25, 0.0, 5)
    assert (train["device"], train["bf16"], train["fp16"], train["gradient_checkpointing"]) == (
        "cpu",
        0,
        0,
        1,
    )
    assert (train["metric_for_best_model"], train["greater_is_better"]) == ("macro_f1", True)
    assert (
        saved["task"]["max_length"] == 32
        and saved["seeds"] == [3]
        and saved["strategy"]["strategy"] == "full"
    )
    assert train["clip_norm"] == 0.5 and saved["epochs"] == 2.0  # from the FinetuneConfig given as config=
    rows = json.loads((tmp_path / "ft" / "test_metrics.json").read_text())["sizes"]["train"]
    assert train["steps"] == 2 * -(-rows // 16)  # from epochs: TrainConfig's own steps=1000 did not count
    assert [r["step"] for r in logged.records] == list(range(1, train["steps"] + 1))
    history = run.history
    lines = (tmp_path / "ft" / "metrics.jsonl").read_text().splitlines()
    assert isinstance(history, pd.DataFrame) and len(history) == len(lines)
    assert list(history.columns[:2]) == ["step", "split"] and "seed" not in history.columns
    validation = history[history["split"] == "validation"]
    assert validation["step"].iloc[0] == 0 and validation["macro_f1"].notna().all()
    assert run.test_metrics == json.loads((tmp_path / "ft" / "test_metrics.json").read_text())["test"]
    again = warmstart.open_run(tmp_path / "ft")
    assert again.command == "finetune" and again.metrics == run.metrics and again.history.equals(history)


def test_column_keywords_name_a_dataframes_columns_as_the_cli_flags_do(tiny_pretrained, rt_small, tmp_path):
    """text_column= / label_column= as finetune's --text-column / --label-column (the error for a missing
    column tells Python users to pass them); pretrain's text_column= reads a table corpus."""
    frame = pd.read_csv(rt_small).rename(columns={"text": "review", "label": "sentiment"})
    run = warmstart.finetune(
        *QUIET, "train.steps=2", init=tiny_pretrained, data=frame, out=tmp_path / "ft", max_length=32,
        text_column="review", label_column="sentiment",
    )  # fmt: skip
    saved = yaml.safe_load((tmp_path / "ft" / "config.yaml").read_text())["data"]
    assert (saved["text_column"], saved["label_column"]) == ("review", "sentiment")
    assert set(run.load().predict(["a fine film"])[0]["probabilities"]) == {"fresh", "rotten"}
    with pytest.raises(WarmstartError, match=r"has no key 'text'.*; pass text_column=NAME, one of: review"):
        warmstart.finetune(
            *QUIET, init=tiny_pretrained, data=frame, out=tmp_path / "no", label_column="sentiment"
        )
    corpus = tmp_path / "corpus.csv"
    frame[["review"]].to_csv(corpus, index=False)
    pre = warmstart.pretrain(
        *QUIET, init=tiny_pretrained, corpus=corpus, text_column="review", steps=2, batch_size=4,
        max_length=32, out=tmp_path / "pre",
    )  # fmt: skip
    assert yaml.safe_load((tmp_path / "pre" / "config.yaml").read_text())["data"]["text_column"] == "review"
    assert pre.metrics


def test_several_seeds_have_a_seed_column_and_test_metrics_per_seed(tiny_pretrained, rt_small, tmp_path):
    run = warmstart.finetune(
        *QUIET, init=tiny_pretrained, data=rt_small, out=tmp_path / "ft", steps=2, seeds=[1, 2], batch_size=8,
        grad_accum=2, max_length=32, report_to="none",
    )  # fmt: skip
    train = yaml.safe_load((tmp_path / "ft" / "config.yaml").read_text())["train"]
    assert train["grad_accum"] == 2 and train["report_to"] == ["none"]
    assert not any((tmp_path / "ft" / f"seed-{s}" / "tb").exists() for s in (1, 2))  # no TensorBoard
    history = run.history
    assert list(history.columns[:3]) == ["seed", "step", "split"] and set(history["seed"]) == {1, 2}
    for seed in (1, 2):
        lines = (tmp_path / "ft" / f"seed-{seed}" / "metrics.jsonl").read_text().splitlines()
        assert (history["seed"] == seed).sum() == len(lines)
    assert set(run.test_metrics) == {1, 2} and "accuracy" in run.test_metrics[1]
    again = warmstart.Run.from_dir(tmp_path / "ft")
    assert again.test_metrics == run.test_metrics and again.metrics == run.metrics  # the summary over seeds


@pytest.mark.parametrize(
    "command, kwargs, dotted, names",
    [
        ("finetune", dict(lr=1e-4, train=dict(lr=2e-4)), (), ["lr=0.0001", "train=dict(lr=0.0002)"]),
        ("finetune", dict(lr=1e-4, train=TrainConfig(lr=2e-4)), (), ["lr=0.0001", "train=dict(lr=0.0002)"]),
        ("finetune", dict(lr=1e-4), ("train.lr=2e-4",), ["lr=0.0001", "'train.lr=2e-4'"]),
        ("finetune", dict(max_length=64, task=dict(max_length=32)), (),
         ["max_length=64", "task=dict(max_length=32)"]),
        ("finetune", dict(seed=1, seeds=[2]), (), ["seed=1", "seeds=[2]"]),
        ("pretrain", dict(max_length=64, data=dict(seq_len=32)), (),
         ["max_length=64", "data=dict(seq_len=32)"]),
        ("pretrain", dict(steps=5, train=dict(steps=6)), (), ["steps=5", "train=dict(steps=6)"]),
    ],
)  # fmt: skip
def test_a_keyword_and_its_nested_form_together_are_refused(command, kwargs, dotted, names, tmp_path):
    with pytest.raises(WarmstartError) as caught:
        getattr(warmstart, command)(*dotted, out=tmp_path / "run", **kwargs)
    assert all(name in str(caught.value) for name in names), str(caught.value)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "command, keyword, meant",
    [
        ("finetune", "learning_rate", "lr="),
        ("finetune", "lrr", "lr="),
        ("finetune", "num_train_epochs", "epochs="),
        ("finetune", "per_device_train_batch_size", "batch_size="),
        ("finetune", "clip_norm", "train=dict(clip_norm=...)"),
        ("pretrain", "learning_rate", "lr="),
        ("pretrain", "hidden_size", "model=dict(hidden_size=...)"),
        ("train_word2vec", "vector_size", "dim="),  # gensim's names
        ("train_word2vec", "alpha", "lr="),
    ],
)
def test_unknown_keywords_get_the_python_keyword_they_meant(command, keyword, meant):
    with pytest.raises(WarmstartError) as caught:
        getattr(warmstart, command)(**{keyword: 1})
    assert isinstance(caught.value, TypeError)  # as Python answers an unknown keyword
    assert f"got an unknown keyword {keyword}=" in caught.value.problem
    assert f"did you mean {meant}" in caught.value.fix and "--" not in str(caught.value)


def test_a_file_given_as_a_positional_setting_is_sent_to_its_keyword(rt_small):
    """`train_word2vec("corpus.txt")` (gensim's Word2Vec(sentences) habit): positional arguments are
    settings; the error names the keyword for a file and for rows in memory."""
    with pytest.raises(WarmstartError) as caught:
        warmstart.train_word2vec(str(rt_small))
    assert "is not KEY=VALUE" in caught.value.problem and f"corpus={str(rt_small)!r}" in caught.value.fix
    with pytest.raises(WarmstartError, match=r"texts=\[\.\.\.\]"):
        warmstart.train_word2vec([["a", "cat"], ["a", "dog"]])


@pytest.mark.parametrize(
    "kwargs, problem, fix",
    [
        (dict(), "no model given", "pass init=RUN"),
        (dict(init=True, epochs=0), "epochs must be above 0", "e.g. epochs=3"),
        (dict(init=True, lr=5.0), "lr=... must be in [0, 1]", "use e.g. lr=3e-4"),
        (dict(init=True, train=dict(lrr=1)), "unknown key 'lrr' in train=dict(...)", "did you mean lr=...?"),
        (dict(init=True, train=dict(warmup_steps=-1)), "train=dict(warmup_steps=...) must be 0 or more",
         "use e.g. train=dict(warmup_steps=100)"),
        (dict(init=True, task=dict(max_length="long")), "the setting max_length=... expects int",
         "set it like max_length=<int>"),
    ],
)  # fmt: skip
def test_finetune_errors_speak_python(kwargs, problem, fix, tiny_pretrained, rt_small, tmp_path):
    if kwargs.pop("init", False):
        kwargs["init"] = tiny_pretrained
    with pytest.raises(WarmstartError) as caught:
        warmstart.finetune(data=rt_small, out=tmp_path / "ft", **kwargs)
    assert problem in caught.value.problem and fix in caught.value.fix, str(caught.value)
    assert (
        "--" not in str(caught.value) and str(caught.value) == f"{caught.value.problem}; {caught.value.fix}"
    )


def test_load_errors_speak_python(tiny_pretrained, tmp_path):
    with pytest.raises(WarmstartError) as caught:
        warmstart.load(tiny_pretrained, device="cuda:7" if _has_cuda() else "cuda")
    assert "device=" in str(caught.value) and "train.device" not in str(caught.value)
    with pytest.raises(WarmstartError, match="unknown dtype"):
        warmstart.load(tiny_pretrained, dtype="float8")
    with pytest.raises(WarmstartError) as caught:
        warmstart.open_run(tmp_path)
    assert "not a run directory" in str(caught.value)


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.device_count() < 8


@pytest.mark.parametrize(
    "message, function, python",
    [
        ("no data given; pass --data NAME_FILE_OR_DIR, or --test-file FILE", "finetune",
         "no data given; pass data=NAME_FILE_OR_DIR, or data=dict(test=FILE)"),
        ("unknown config key 'train.foo'; see `--help` for the valid keys", "finetune",
         "unknown key 'foo' in train=dict(...); see help(warmstart.finetune) for the valid keys"),
        ("data.seq_len 600 exceeds model.max_position_embeddings 512; lower data.seq_len", "pretrain",
         "max_length=600 exceeds model=dict(max_position_embeddings=512); lower max_length=..."),
        ("runs/x already exists; pass --overwrite to replace it, or --resume runs/x.", "finetune",
         'runs/x already exists; pass overwrite=True to replace it, or resume="runs/x".'),
        ("train one with `warmstart tokenizer train --kind bpe`", "pretrain",
         'train one with warmstart.train_tokenizer(kind="bpe")'),
        ("use train.device=cpu, or train.fp16=false", "finetune", 'use device="cpu", or fp16=False'),
        ("drop train.fsdp=true: DDP then", "finetune", "drop train=dict(fsdp=True): DDP then"),
        ("the weights in model.safetensors; draw it with `warmstart report RUN`", "load",
         "the weights in model.safetensors; draw it with `warmstart report RUN`"),
        ("e.g. --seeds 1,2,3", "finetune", "e.g. seeds=[1, 2, 3]"),
    ],
)  # fmt: skip
def test_command_line_words_become_python(message, function, python):
    command = function if function in ("finetune", "pretrain") else ""
    assert python_text(message, function, command) == python


def test_an_interrupted_run_says_how_to_resume_it_in_python():
    stop = Stopped(
        2, "stopped by SIGINT after step 5; checkpoint c; continue with: warmstart finetune --resume r"
    )
    translate(stop, "finetune")
    assert str(stop).endswith('continue with: warmstart.finetune(resume="r")') and stop.exit_code == 130
    error = WarmstartError("pass --init RUN", "see `--help`")
    translate(error, "finetune")
    translate(error, "pretrain")  # once only: an error passing through two functions
    assert (error.problem, error.fix) == ("pass init=RUN", "see help(warmstart.finetune)")
