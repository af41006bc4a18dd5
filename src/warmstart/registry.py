"""Name -> class tables, so that dispatch on a config string is a lookup, never an if-chain."""

from dataclasses import dataclass

from warmstart.errors import WarmstartError
from warmstart.models.bart import BartConfig, BartModel
from warmstart.models.bert import BertConfig, BertModel
from warmstart.models.elmo import ElmoConfig, ElmoModel
from warmstart.models.gpt2 import GPT2Config, GPT2Model
from warmstart.models.t5 import T5Config, T5Model
from warmstart.models.xlnet import XLNetConfig, XLNetModel
from warmstart.objectives.bilm import BiLM
from warmstart.objectives.clm import CausalLM
from warmstart.objectives.denoising import Denoising
from warmstart.objectives.mlm import MaskedLM
from warmstart.objectives.nsp_sop import NextSentenceLM, SentenceOrderLM
from warmstart.objectives.plm import PermutationLM
from warmstart.objectives.replaced_token import ReplacedTokenDetection
from warmstart.objectives.span_corruption import SpanCorruption
from warmstart.tasks.classification import ClassificationTask
from warmstart.tasks.extractive_qa import ExtractiveQATask
from warmstart.tasks.multiple_choice import MultipleChoiceTask
from warmstart.tasks.multitask import MultitaskTask
from warmstart.tasks.tagging import TaggingTask
from warmstart.tasks.text_to_text import TextToTextTask

MODELS = {
    "bert": (BertConfig, BertModel),
    "gpt2": (GPT2Config, GPT2Model),
    "t5": (T5Config, T5Model),
    "bart": (BartConfig, BartModel),
    "elmo": (ElmoConfig, ElmoModel),
    "xlnet": (XLNetConfig, XLNetModel),
}
OBJECTIVES = {
    "mlm": MaskedLM,
    "mlm+nsp": NextSentenceLM,
    "mlm+sop": SentenceOrderLM,
    "electra": ReplacedTokenDetection,
    "clm": CausalLM,
    "span_corruption": SpanCorruption,
    "denoising": Denoising,
    "bilm": BiLM,
    "plm": PermutationLM,
}
# a family's own objective: the first registered objective that trains it (objectives declare ``families``)
DEFAULT_OBJECTIVE = {f: name for name, unit in reversed(OBJECTIVES.items()) for f in unit.families}
TASKS = {
    t.name: t
    for t in (
        ClassificationTask,
        TaggingTask,
        ExtractiveQATask,
        MultipleChoiceTask,
        TextToTextTask,
        MultitaskTask,
    )
}


def lookup(table: dict, what: str, name: str):
    if name not in table:
        raise WarmstartError(f"unknown {what} '{name}'", f"choose one of: {', '.join(sorted(table))}")
    return table[name]


@dataclass(frozen=True)
class Family:
    """A model family as the registry knows it: its config and model classes, and its own self-supervised
    objective (whose ``hf_architecture`` is the transformers class of the family's LM head)."""

    name: str
    config: type
    model: type
    objective: type


def family(name: str) -> Family:
    config_cls, model_cls = lookup(MODELS, "model family", name)
    return Family(name, config_cls, model_cls, OBJECTIVES[DEFAULT_OBJECTIVE[name]])


def family_of(config_json: dict) -> Family:
    """The family of a checkpoint's config.json (its ``model_type``; warmstart's families only)."""
    return family(config_json.get("model_type", "bert"))


def generates(name: str | None) -> bool:
    """Whether a family writes text (False for names the registry lacks)."""
    return name in MODELS and MODELS[name][1].generates
