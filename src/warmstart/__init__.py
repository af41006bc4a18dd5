"""warmstart: pretrain, then finetune, and measure what pretraining bought.

From Python (the same functions the command line calls)::

    import warmstart

    model = warmstart.load("runs/rt")                 # a run, a checkpoint or a transformers directory
    model.predict(["A warm, funny film.", "Dull."])   # labels and probabilities, in order
    model.encode(["a sentence"])                      # sentence vectors (numpy)
    run = warmstart.finetune(init="runs/mini", data=df, epochs=3, train=dict(lr=3e-5),
                             callbacks=[StopWhenGood()])
    run.metrics, run.load()

Names load on first use, so ``import warmstart`` stays light.
"""

from warmstart import word2vec  # noqa: F401 - the package is callable: warmstart.word2vec(...) trains

__version__ = "0.1.0"

__all__ = [
    "Model",
    "Run",
    "StopTraining",
    "finetune",
    "load",
    "pretrain",
    "train_tokenizer",
    "word2vec",
]
# name -> the module that defines it, imported on first use (by name: the package's own modules import
# ``warmstart`` for __version__ without pulling the API layers in)
_WHERE = {
    "load": "warmstart.api.model",
    "Model": "warmstart.api.model",
    "Run": "warmstart.api.run",
    "StopTraining": "warmstart.train.callbacks",
    "finetune": "warmstart.api.train",
    "pretrain": "warmstart.api.train",
    "train_tokenizer": "warmstart.api.train",
}


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'warmstart' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *__all__])
