"""Wrong arguments of the Python API, by class (issue 38): texts in memory that are not valid Unicode (a
lone surrogate reached the cache's UTF-8 encoder and raised its UnicodeEncodeError), a string or path passed
as ``texts`` (read as a corpus name or file: ``texts="news"`` trained on the news corpus), whole numbers past
what the config keys of that name take (seeds, sizes), sentinels by the trillion (minutes of adding tokens),
epochs by the googol (a run that never ends), and a save onto a file or into the model itself. Each is one
line naming the argument, a WarmstartError that is also a TypeError or ValueError, before anything is
written: rows of the table in test_api_bad_arguments.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd

import warmstart
from tests.helpers.api_calls import RECORDS, bad, ft, pre, tok
from warmstart.errors import WarmstartError

BY_CLASS = [
    # texts and records in memory: valid Unicode, named by their place
    bad("pretrain-texts-surrogate", lambda fx: pre(fx, texts=["fine", "a \ud800"]), "texts[1]"),
    bad("tokenizer-texts-surrogate", lambda fx: tok(fx, texts=["fine", "\udfff b"]), "texts[1]"),
    bad(
        "word2vec-texts-surrogate", lambda fx: warmstart.train_word2vec(texts=["a b", "\ud800 c"]), "texts[1]"
    ),
    bad(
        "finetune-record-surrogate",
        lambda fx: ft(fx, data=[*RECORDS, {"text": "x \ud800", "label": "pos"}]),
        "data[8]['text']",
    ),
    bad("finetune-pair-surrogate", lambda fx: ft(fx, data=[("a film", "pos"), ("\ud800", "neg")]), "data[1]"),
    bad(
        "finetune-columns-surrogate",
        lambda fx: ft(fx, data={"text": ["a", "b\ud800"], "label": ["pos", "neg"]}),
        "data row 1['text']",
    ),
    bad(
        "finetune-dataframe-surrogate",
        lambda fx: ft(fx, data={"train": pd.DataFrame({"text": ["\ud800"], "label": ["pos"]}, dtype=object)}),
        "data['train'] row 0['text']",
    ),
    bad("finetune-label-key-surrogate", lambda fx: ft(fx, data=[{"text": "a", "\ud800": 1}]), "data[0]"),
    # items of a texts list that are not texts
    bad("pretrain-texts-a-number", lambda fx: pre(fx, texts=["a", 2]), "texts[1]", TypeError),
    bad("tokenizer-texts-none", lambda fx: tok(fx, texts=[None]), "texts[0]", TypeError),
    bad("finetune-data-a-float", lambda fx: ft(fx, data=[float("nan")]), "data[0]", TypeError),
    # a string or path as texts: not a corpus name in disguise
    bad("pretrain-texts-a-corpus-name", lambda fx: pre(fx, texts="wiki-leads"), "texts"),
    bad("tokenizer-texts-one-string", lambda fx: tok(fx, texts="one text"), "texts"),
    bad("word2vec-texts-a-path", lambda fx: warmstart.train_word2vec(texts=Path("corpus.txt")), "texts"),
    # numbers past the range of the config key of that name
    bad("finetune-seed-negative", lambda fx: ft(fx, seed=-1), "seed"),
    bad("finetune-seed-past-2-32", lambda fx: ft(fx, seed=2**32), "seed"),
    bad("finetune-seeds-negative", lambda fx: ft(fx, seeds=[1, -2]), "seeds[1]"),
    bad("finetune-epochs-a-googol", lambda fx: ft(fx, epochs=1e100, steps=0), "epochs"),
    bad("finetune-batch-size-past-2-24", lambda fx: ft(fx, batch_size=2**40), "batch_size"),
    bad("finetune-max-length-past-2-24", lambda fx: ft(fx, max_length=2**40), "max_length"),
    bad("finetune-grad-accum-a-trillion", lambda fx: ft(fx, grad_accum=10**12), "grad_accum"),
    bad("pretrain-steps-past-int64", lambda fx: pre(fx, steps=2**70), "steps"),
    bad("tokenizer-sentinels-a-trillion", lambda fx: tok(fx, sentinels=10**12), "sentinels"),
    bad(
        "generate-max-new-tokens-past-2-24",
        lambda fx: fx.model.generate("a", max_new_tokens=2**40),
        "max_new_tokens",
    ),
    bad("encode-batch-size-past-2-24", lambda fx: fx.model.encode("a", batch_size=2**40), "batch_size"),
    # save: not onto a file, not into the model it copies
    bad("save-onto-a-file", lambda fx: fx.model.save(fx.file), "is a file", WarmstartError),
    bad(
        "save-into-itself", lambda fx: fx.model.save(fx.model.path / "x"), "inside the model", WarmstartError
    ),
    # search: its counts, its space, its settings
    bad("search-trials-zero", lambda fx: srch(fx, trials=0), "trials"),
    bad("search-workers-a-float", lambda fx: srch(fx, workers=1.5), "workers", TypeError),
    bad("search-space-a-number", lambda fx: srch(fx, space=3), "space", TypeError),
    bad("search-setting-not-key-value", lambda fx: srch(fx, dotted=("lr",)), "KEY=VALUE"),
    bad("search-unknown-space", lambda fx: srch(fx, space="bert-grod"), "bert-grod", WarmstartError),
]


def srch(fx: SimpleNamespace, dotted: tuple = (), **kwargs) -> object:
    """A search that would run, but for the one wrong argument in ``kwargs``."""
    return warmstart.search(*dotted, **{"init": fx.pre, "data": RECORDS, "out": fx.tmp / "s", **kwargs})
