"""word2vec: skip-gram and CBOW with negative sampling, evaluation, file formats, and warm starts."""

import importlib
import sys
import types


class _CallablePackage(types.ModuleType):
    """``warmstart.word2vec`` is both this package and the function that trains word vectors from Python
    (``warmstart.word2vec(texts=..., dim=100)``, api/train.py): the package, called, is that function. (By
    name: the API sits above this package's layer.)"""

    def __call__(self, *args, **kwargs):
        return importlib.import_module("warmstart.api.train").word2vec(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
