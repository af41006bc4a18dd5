"""Fill in [MASK]: the top-k tokens of a masked-LM run's head at every mask of a text, with probabilities.

Every mask of one text is predicted at once from the same input (as BERT is trained: the other masks stay
masks). ``FillMask(run, random_init=True)`` gives the run's random twin (same architecture, tokenizer and
head shape, untrained weights): the baseline a cloze probe compares against. ``head_untrained`` says when a
run's own head was never trained (an import that started it fresh). A run pretrained with DeBERTa's
enhanced mask decoder (``mlm.emd``, recorded in its run card) is read through the decoder, as it trained.
An XLNet run (permutation LM, ``plm``) predicts each mask through its query stream, the masks hidden from
every position (``perm_mask``): each mask from the text around it, as a target placed last in the order.
"""

from __future__ import annotations

import torch
from safetensors.torch import load_file

from warmstart.checkpoints.load import load_encoder
from warmstart.errors import WarmstartError
from warmstart.inference.load import SavedModel
from warmstart.objectives.emd import emd_states
from warmstart.objectives.mlm import MaskedLM, MLMHead
from warmstart.registry import OBJECTIVES
from warmstart.train.loop import pick_device

XLNET_LENGTH = 512  # the length XLNet pretrained at


def has_mlm_head(objective: str | None) -> bool:
    """Whether runs of ``objective`` keep an MLM head as ``head.*`` (MaskedLM and its subclasses NSP, SOP)."""
    return objective in OBJECTIVES and issubclass(OBJECTIVES[objective], MaskedLM)


def fills_masks(objective: str | None) -> bool:
    """Whether a run pretrained with ``objective`` can guess a masked token: an MLM head, or XLNet's
    permutation LM (its output layer read through the query stream)."""
    return has_mlm_head(objective) or objective == "plm"


def query_inputs(n: int, where: list[int], device) -> dict:
    """XLNet's ``perm_mask`` (1, n, n) hiding the masked positions from every position, and
    ``target_mapping`` (1, len(where), n) picking their query streams."""
    perm_mask = torch.zeros(1, n, n, device=device)
    perm_mask[0, :, where] = 1.0
    target_mapping = torch.zeros(1, len(where), n, device=device)
    target_mapping[0, torch.arange(len(where)), where] = 1.0
    return {"perm_mask": perm_mask, "target_mapping": target_mapping}


def untrained(head: MLMHead) -> bool:
    """Whether the head holds its initial LayerNorm (ones, zeros) and output bias (zeros): no training step
    has touched it. An import of a model without an MLM head (all-MiniLM-L6-v2) starts it so."""
    return bool(
        torch.all(head.norm.weight == 1) and not torch.any(head.norm.bias) and not torch.any(head.bias)
    )


class FillMask:
    """The masks of a text filled by ``run``: a run or model directory (its final model), or a SavedModel
    (its encoder, loaded once, moves to ``device``)."""

    def __init__(self, run: str | SavedModel, random_init: bool = False, seed: int = 0, device: str = "auto"):
        torch.manual_seed(seed)  # the random twin's weights
        saved = run if isinstance(run, SavedModel) else SavedModel(run, prefer="final")
        if random_init:
            encoder, self.tokenizer, _ = load_encoder(saved.path, random_init=True)
        else:
            encoder, self.tokenizer, _ = saved.encoder
        card = saved.card
        if card.finetuned:  # its card still names the pretraining objective, but the MLM head stayed behind
            raise WarmstartError(
                f"{saved.name} holds a finetuned {card.task_name} model: finetuning keeps the encoder, not "
                "the MLM head that fills masks",
                "use the pretrained run it was finetuned from (its --init)",
            )
        objective = card.objective
        emd = card.sections.get("emd") or {}
        self.emd_passes = emd.get("passes")  # the head reads the decoder's states
        if not fills_masks(objective) or self.tokenizer.mask_id is None:
            raise WarmstartError(
                f"{saved.name} was pretrained with {objective or 'an unknown objective'}, which has no MLM "
                "head",
                "use a run pretrained with mlm, mlm+nsp, mlm+sop or plm (`pretrain --objective mlm`)",
            )
        c = encoder.config
        self.permuted = objective == "plm"
        head = (
            None
            if self.permuted
            else MLMHead(c.hidden_size, c.vocab_size, c.hidden_act, c.layer_norm_eps, encoder.word_embeddings)
        )
        if head is not None and not random_init:
            state = load_file(str(saved.path / "model.safetensors"))
            head.load_state_dict({k[len("head.") :]: v for k, v in state.items() if k.startswith("head.")})
        self.head_untrained = head is not None and not random_init and untrained(head)
        self.device = pick_device(device)
        self.encoder = encoder.eval().to(self.device)
        self.head = encoder.lm_logits if head is None else head.eval().to(self.device)
        self.mask_token = self.tokenizer.roles["mask_token"]
        self.max_length = getattr(c, "max_length", XLNET_LENGTH)  # XLNet's positions are relative

    @torch.no_grad()
    def probabilities(self, text: str) -> tuple[list[int], torch.Tensor]:
        """(positions of the masks in the token ids, (masks, vocab) softmax of the head's logits there)."""
        (ids,), (types,) = self.tokenizer.encode_pairs([text], max_length=self.max_length)
        where = [i for i, t in enumerate(ids) if t == self.tokenizer.mask_id]
        given = self.tokenizer.encode(text).count(self.tokenizer.mask_id)  # the whole text's, untruncated
        if not given:
            raise WarmstartError(
                f"the text has no {self.mask_token}: {text[:80]!r}",
                f"put {self.mask_token} where a word should be guessed",
            )
        if len(where) < given:  # the model reads max_length tokens: a mask past them would go unanswered
            raise WarmstartError(
                f"the text has {given} x {self.mask_token} but only {len(where)} within the model's "
                f"{self.max_length} tokens (mask {len(where) + 1} on is cut off): {text[:80]!r}",
                f"shorten the text before mask {len(where) + 1}, or split it into texts of at most "
                f"{self.max_length} tokens",
            )
        tensor = lambda x: torch.tensor([x], device=self.device)  # noqa: E731
        if self.permuted:  # XLNet: each mask's query stream, no position seeing any mask
            stream = self.encoder.streams(
                tensor(ids), None, tensor(types), **query_inputs(len(ids), where, self.device)
            )
            return where, self.head(stream.query[0]).float().softmax(-1)
        if self.emd_passes:  # pretrained with the enhanced mask decoder: its head reads the decoder's states
            hidden, _ = emd_states(self.encoder, {"input_ids": tensor(ids), "token_type_ids": tensor(types)},
                                   self.emd_passes)  # fmt: skip
        else:
            hidden = self.encoder(tensor(ids), None, tensor(types))
        return where, self.head(hidden[0, where]).float().softmax(-1)

    def fill(self, text: str, top_k: int = 5) -> dict:
        """``{"text", "masks": [[{"token", "score"}, ...] per mask, in order]}``."""
        if top_k < 1:
            raise WarmstartError(f"top_k must be at least 1, got {top_k}", "e.g. --top-k 5")
        _, probs = self.probabilities(text)
        scores, best = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
        masks = [
            [{"token": self.tokenizer.id_to_token(int(t)), "score": round(float(s), 6)} for s, t in zip(*row)]
            for row in zip(scores, best)
        ]
        return {"text": text, "masks": masks}
