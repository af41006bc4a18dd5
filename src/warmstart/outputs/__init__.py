"""The one output guard every command passes (ARCHITECTURE.md, core layer).

- ``marker``: what warmstart made. Each run, export, import, tokenizer, shard set, word2vec run, probe,
  study and demo directory holds a ``.warmstart`` marker; ``--overwrite`` replaces only such a directory.
- ``check`` (``guard``): a command declares its outputs (side files included) and inputs before it works; an
  output that is, contains or lies inside an input is refused with nothing changed, and an output being
  written by another warmstart process is refused too (``claim``).
- ``journal``: the move-aside of ``--overwrite`` is journaled beside the directory, so a kill at any moment
  is put right by the next command: the old directory comes back, or the replacement is finished.
"""

from warmstart.outputs.check import claim, guard, record, release_all
from warmstart.outputs.journal import abandon, move_aside, recover, recover_all, settle
from warmstart.outputs.marker import made_by_warmstart, mark, refuse_foreign

__all__ = [
    "abandon",
    "claim",
    "guard",
    "made_by_warmstart",
    "mark",
    "move_aside",
    "record",
    "recover",
    "recover_all",
    "refuse_foreign",
    "release_all",
    "settle",
]
