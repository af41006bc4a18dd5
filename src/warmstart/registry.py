"""Name -> class tables, so that dispatch on a config string is a lookup, never an if-chain."""

from warmstart.errors import WarmstartError
from warmstart.models.bert import BertConfig, BertModel
from warmstart.objectives.mlm import MaskedLM
from warmstart.objectives.nsp_sop import NextSentenceLM, SentenceOrderLM
from warmstart.objectives.replaced_token import ReplacedTokenDetection
from warmstart.tasks.classification import ClassificationTask
from warmstart.tasks.extractive_qa import ExtractiveQATask
from warmstart.tasks.multiple_choice import MultipleChoiceTask
from warmstart.tasks.tagging import TaggingTask

MODELS = {"bert": (BertConfig, BertModel)}
OBJECTIVES = {
    "mlm": MaskedLM,
    "mlm+nsp": NextSentenceLM,
    "mlm+sop": SentenceOrderLM,
    "electra": ReplacedTokenDetection,
}
TASKS = {t.name: t for t in (ClassificationTask, TaggingTask, ExtractiveQATask, MultipleChoiceTask)}


def lookup(table: dict, kind: str, name: str):
    if name not in table:
        raise WarmstartError(f"unknown {kind} '{name}'", f"choose one of: {', '.join(sorted(table))}")
    return table[name]
