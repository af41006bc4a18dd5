"""warmstart: pretrain, then finetune, and measure what pretraining bought.

From Python (the same functions the command line calls)::

    import warmstart

    # finetune: typed keywords for the common settings, your own splits, callbacks
    run = warmstart.finetune(init="runs/mini", data={"train": df, "validation": dev, "test": test},
                             lr=3e-5, epochs=3, batch_size=16, max_length=128, seeds=[1, 2],
                             device="cuda", fp16=True, callbacks=[StopWhenGood()])
    run.metrics, run.test_metrics               # test metrics (a summary over seeds when several)
    run.history                                 # metrics.jsonl as a pandas DataFrame (seed, step, split, ...)
    run = warmstart.open_run("runs/rt")         # the same Run of a finished run directory

    # the config sections as typed dataclasses, anywhere a section dict is taken
    cfg = warmstart.FinetuneConfig(init="runs/mini", train=warmstart.TrainConfig(clip_norm=0.5))
    warmstart.finetune(config=cfg, data="rotten-tomatoes", task="classification", lr=2e-5)

    # a model: on a device, in a dtype; Hugging Face's argument names
    model = warmstart.load("runs/rt", device="cuda", dtype="bf16")  # a run, checkpoint or transformers dir
    model.predict(["A warm, funny film.", "Dull."])                 # label and probabilities, in order
    model.predict("A warm, funny film.", top_k=None)                # every label, best first (as pipeline)
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)  # as sentence-transformers
    model.similarity(vectors, vectors)                              # cosine matrix
    warmstart.load("runs/gpt2").generate("The city", max_new_tokens=20, do_sample=True, top_p=0.9,
                                         num_return_sequences=3, repetition_penalty=1.2, stop=["\\n"])

Typed keywords of ``finetune``/``pretrain`` (each one config key, api/settings.py): lr, epochs, batch_size,
max_length, seeds, seed, device, bf16, fp16, warmup_ratio, weight_decay, grad_accum, eval_every,
early_stopping, steps, task, strategy, report_to, metric_for_best_model, greater_is_better,
gradient_checkpointing; every other key through its section (``train=dict(clip_norm=0.5)``) or a dotted
string (``"train.clip_norm=0.5"``). A key given twice (``lr=`` and ``train=dict(lr=)``) is an error.

Callbacks (warmstart.train.callbacks): objects with ``on_step(step, loss)``, ``on_log(step, record)``
(loss, lr, epoch, tokens_seen, grad_norm), ``on_evaluate(step, metrics)`` (step 0 too), ``on_save(step,
path)``, ``on_train_end(result)``; raise ``warmstart.StopTraining`` in one to end the run.

Errors a user can fix are ``warmstart.WarmstartError`` (one line: what is wrong; what to do, in Python's
words); ``warmstart.Interrupted`` is raised after SIGINT/SIGTERM once the checkpoint is written (its
message says how to resume). Names load on first use, so ``import warmstart`` stays light.
"""


def _interrupt_until_main() -> None:
    """Launched as the command line (the `warmstart` script, or ``python -m warmstart``): a Ctrl+C before
    cli/main.py's own handling (these first imports) is one line, ``interrupted``, and exit code 130, as it is
    after; with ``warmstart.cli.main.main`` running it is the KeyboardInterrupt that main turns into that
    line. First, so that the window left is Python's own start; ``import warmstart`` in Python changes
    nothing."""
    import os
    import sys

    if not _command_line(getattr(sys, "orig_argv", [])):
        return
    import _signal  # the C module under ``signal`` (already loaded): importing ``signal`` takes a while

    def interrupted(signum: int, frame: object) -> None:
        while frame is not None:
            code, names = frame.f_code, frame.f_globals  # type: ignore[attr-defined]
            if code.co_name == "main" and names.get("__name__") == "warmstart.cli.main":
                raise KeyboardInterrupt
            frame = frame.f_back  # type: ignore[attr-defined]
        try:
            sys.stderr.write("interrupted\n")
            sys.stderr.flush()
        except (OSError, ValueError, RuntimeError):
            pass
        os._exit(130)

    try:  # only where Ctrl+C would raise (not where it is ignored, as in a background job)
        if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
            _signal.signal(_signal.SIGINT, interrupted)
    except ValueError:  # not the main thread
        pass


def _command_line(argv: list[str]) -> bool:
    """Whether Python's own command line (``sys.orig_argv``) runs the `warmstart` script or ``-m warmstart``
    (a spawned worker process runs ``-c``; a program of the user's, its own script)."""
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "-" or not arg.startswith("-"):
            return arg.replace("\\", "/").rsplit("/", 1)[-1] in ("warmstart", "warmstart.exe")
        if arg.startswith("--"):
            continue
        for i, letter in enumerate(arg[1:], 2):  # -B, -Bm NAME, -mNAME, -X importtime, -c CODE
            if letter in "cmXW":
                value = arg[i:] or next(rest, "")
                if letter in "cm":
                    return letter == "m" and value == "warmstart"
                break
    return False


_interrupt_until_main()

from typing import TYPE_CHECKING  # noqa: E402 - after the handler above

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name loads on first use (below)
    from warmstart.api.configs import (
        DataConfig,
        FinetuneConfig,
        GenerationConfig,
        PretrainConfig,
        StrategyConfig,
        TaskConfig,
        TrainConfig,
    )
    from warmstart.api.model import Model, load
    from warmstart.api.run import Run, open_run
    from warmstart.api.search import search
    from warmstart.api.train import finetune, pretrain, train_tokenizer, train_word2vec
    from warmstart.errors import Stopped as Interrupted
    from warmstart.errors import WarmstartError
    from warmstart.train.callbacks import StopTraining

__version__ = "0.1.0"

__all__ = [
    "DataConfig",
    "FinetuneConfig",
    "GenerationConfig",
    "Interrupted",
    "Model",
    "PretrainConfig",
    "Run",
    "StopTraining",
    "StrategyConfig",
    "TaskConfig",
    "TrainConfig",
    "WarmstartError",
    "finetune",
    "load",
    "open_run",
    "pretrain",
    "search",
    "train_tokenizer",
    "train_word2vec",
]
# name -> "module" or "module:attribute" that defines it, imported on first use (by name: the package's
# own modules import ``warmstart`` for __version__ without pulling the API layers in)
_WHERE = {
    "load": "warmstart.api.model",
    "Model": "warmstart.api.model",
    "Run": "warmstart.api.run",
    "open_run": "warmstart.api.run",
    "StopTraining": "warmstart.train.callbacks",
    "WarmstartError": "warmstart.errors",
    "Interrupted": "warmstart.errors:Stopped",  # SIGINT/SIGTERM: stopped after a checkpoint (signals.py)
    "finetune": "warmstart.api.train",
    "pretrain": "warmstart.api.train",
    "train_tokenizer": "warmstart.api.train",
    "train_word2vec": "warmstart.api.train",
    "search": "warmstart.api.search",
    "DataConfig": "warmstart.api.configs",
    "FinetuneConfig": "warmstart.api.configs",
    "GenerationConfig": "warmstart.api.configs",
    "PretrainConfig": "warmstart.api.configs",
    "StrategyConfig": "warmstart.api.configs",
    "TaskConfig": "warmstart.api.configs",
    "TrainConfig": "warmstart.api.configs",
}


def __getattr__(name: str) -> object:
    if name in _WHERE:
        import importlib

        module, _, attribute = _WHERE[name].partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'warmstart' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
