"""A Hugging Face hub model id where a model directory is wanted (``finetune --init bert-base-uncased``,
``warmstart.load("sentence-transformers/all-MiniLM-L6-v2")``), as transformers' ``from_pretrained`` takes
one: its snapshot through huggingface_hub's ``snapshot_download``, the files a model needs only (config,
weights, tokenizer, a sentence encoder's pooling), from the hub, or from huggingface_hub's cache when the hub
cannot be reached (HF_HUB_OFFLINE set, or a resolver that does not know its host: data/hf_hub.py's probe).
The snapshot is then a transformers directory like any other (hub/on_the_fly.py imports it).

A name is taken as a model id when nothing of that name is here: ``NAME`` or ``ORG/NAME`` whose first part
is not a local folder (``runs/ft`` with a ``runs/`` folder here is a mistyped path, said as such)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from warmstart.data.hf_hub import hf_offline, no_hub
from warmstart.errors import WarmstartError

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
COMMON = ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
          "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model", "added_tokens.json",
          "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "1_Pooling/*",
          "generation_config.json"]  # fmt: skip
SAFETENSORS = ["model.safetensors", "model.safetensors.index.json", "model-*.safetensors"]
PICKLED = ["pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*.bin"]


def is_hub_id(name: str) -> bool:
    """Whether ``name`` reads as a hub model id, nothing of that name being here."""
    if Path(name).exists() or not REPO_ID.match(name) or name.endswith((".json", ".yaml", ".txt")):
        return False
    return "/" not in name or not Path(name.split("/")[0]).is_dir()


def hub_snapshot(name: str) -> Path:
    """The local folder of the hub model ``name``: downloaded (the weights as safetensors where the model
    has them, else its pickled weights), or found in the cache offline; one clear line when neither."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise WarmstartError(
            f"{name} is not a local directory; as a Hugging Face model id it needs huggingface_hub",
            "pip install huggingface_hub (it comes with transformers), or pass a local directory",
        ) from None
    told = hf_offline("HF_HUB_OFFLINE")
    offline = told or no_hub(name, name)
    try:
        folder = Path(snapshot_download(name, allow_patterns=COMMON + SAFETENSORS, local_files_only=offline))
        if not any(folder.glob("*.safetensors")):
            folder = Path(snapshot_download(name, allow_patterns=COMMON + PICKLED, local_files_only=offline))
    except Exception as exc:  # not found, unreachable, gated: one line
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        why = "the hub cannot be reached from here" if offline else f"the hub says: {reason}"
        raise WarmstartError(
            f"{name} is not a local directory, and no model of that name is in the Hugging Face cache ("
            + ("HF_HUB_OFFLINE is set" if told else why)
            + ")",
            "check the path or the model id; or download it where the hub is reachable "
            f"(`hf download {name} --local-dir DIR`) and pass DIR",
        ) from None
    print(f"{name}: the Hugging Face model in {folder}", file=sys.stderr)
    return folder
