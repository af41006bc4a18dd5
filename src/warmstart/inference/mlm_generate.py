"""Generate from a masked LM (a bert-family run with its MLM head), as lecture 001 says one could.

``left-to-right``: append [MASK] after the text, fill it with the head's guess, append the next one: one
forward pass per token, nothing cached (a two-sided model sees the whole sequence each time), so it is slow.
``gibbs`` (Wang & Cho 2019, "BERT has a mouth, and it must speak"): put a fixed number of [MASK] after the
text, then for each sweep visit every generated position in a seeded random order, mask it and draw it
again from the head given all the others. Greedy takes the likeliest token, sample draws after temperature,
top-k and top-p (generation/decode.py's rules). Special tokens ([CLS], [SEP], [MASK], [UNK], ...) are never
chosen. Each sequence is ``[CLS] prompt new [SEP]``, as the model saw text in pretraining.
"""

from __future__ import annotations

import sys

import torch

from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, choose, cut_at_stop, penalize
from warmstart.generation.streamer import Streamer
from warmstart.inference.fill_mask import FillMask, has_mlm_head
from warmstart.inference.load import SavedModel
from warmstart.objectives.emd import emd_states

MLM_SAMPLINGS = ("left-to-right", "gibbs")
SWEEPS = 3  # Gibbs sweeps over the generated positions


class MaskedGenerator:
    """An encoder and its MLM head turned into a writer of ``[CLS] prompt new [SEP]`` sequences.
    ``emd_passes``: DeBERTa's enhanced mask decoder (the head reads its states). ``from_run`` loads a run's
    as ``FillMask`` does."""

    def __init__(self, encoder, head, tokenizer, emd_passes: int | None = None):
        self.encoder, self.head, self.tokenizer, self.emd_passes = encoder, head, tokenizer, emd_passes
        self.max_length = encoder.config.max_length
        self.device = next(encoder.parameters()).device
        self.banned = sorted(tokenizer.special_ids)

    @classmethod
    def from_run(cls, run: str | SavedModel, device: str = "auto") -> MaskedGenerator:
        saved = run if isinstance(run, SavedModel) else SavedModel(run, prefer="final")
        if not has_mlm_head(saved.card.objective):  # XLNet (plm) fills masks but generates as it trained
            raise WarmstartError(
                f"{saved.name} was pretrained with {saved.card.objective or 'an unknown objective'}, "
                "which has no MLM head to generate with",
                "pass a run pretrained with mlm, mlm+nsp or mlm+sop, or a gpt2, t5 or bart run",
            )
        fill = FillMask(saved, device=device)
        return cls(fill.encoder, fill.head, fill.tokenizer, fill.emd_passes)

    @torch.no_grad()
    def logits(self, ids: list[int], where: int) -> torch.Tensor:
        """(1, vocab) logits of the head at position ``where`` of ``ids``, special tokens at -inf."""
        tensor = torch.tensor([ids], device=self.device)
        types = torch.zeros_like(tensor)
        if self.emd_passes:
            batch = {"input_ids": tensor, "token_type_ids": types}
            hidden, _ = emd_states(self.encoder, batch, self.emd_passes)
        else:
            hidden = self.encoder(tensor, None, types)
        logits = self.head(hidden[:, where]).float().cpu()  # drawn on the CPU: one generator for any device
        logits[:, self.banned] = float("-inf")
        return logits

    def _pick(self, ids: list[int], where: int, cfg: GenerationConfig, generator) -> int:
        logits = self.logits(ids, where)
        if cfg.repetition_penalty != 1:
            seen = torch.tensor([ids])
            logits = penalize(logits, seen, (seen != self.tokenizer.mask_id).long(), cfg.repetition_penalty)
        return int(choose(logits, cfg, generator)[0])

    def generate(
        self, prompt: list[int], n: int, cfg: GenerationConfig, sampling: str, generator, sweeps: int = SWEEPS
    ) -> list[int]:
        """``n`` new token ids after ``prompt`` (ids without special tokens)."""
        cls, sep, mask = self.tokenizer.cls_id, self.tokenizer.sep_id, self.tokenizer.mask_id
        if sampling == "left-to-right":
            new: list[int] = []
            for _ in range(n):
                ids = [cls, *prompt, *new, mask, sep]
                new.append(self._pick(ids, len(ids) - 2, cfg, generator))
            return new
        start = 1 + len(prompt)
        ids = [cls, *prompt, *[mask] * n, sep]
        for _ in range(sweeps):
            for k in torch.randperm(n, generator=generator).tolist():
                ids[start + k] = mask
                ids[start + k] = self._pick(ids, start + k, cfg, generator)
        return ids[start : start + n]


def check_request(cfg: GenerationConfig, sampling: str, sweeps: int) -> None:
    """Refuse what masked-LM generation does not do: beam search, an unknown sampling, sweeps below 1."""
    if sampling not in MLM_SAMPLINGS:
        raise WarmstartError(
            f"unknown --mlm-sampling '{sampling}'", f"use one of: {', '.join(MLM_SAMPLINGS)}"
        )
    if cfg.strategy == "beam":
        raise WarmstartError(
            "beam search is not available for a masked LM (its tokens are not scored left to right)",
            "use --strategy greedy or --strategy sample",
        )
    if sweeps < 1:
        raise WarmstartError(f"--mlm-sweeps must be at least 1, got {sweeps}", "use e.g. --mlm-sweeps 3")


def new_tokens(gen: MaskedGenerator, prompt: list[int], cfg: GenerationConfig, which: str) -> int:
    """How many tokens to write after ``prompt``: max_new_tokens within max_length and the positions."""
    if not prompt:
        raise WarmstartError(f"{which} is empty", "give at least one word of text")
    n = cfg.max_new_tokens
    if cfg.max_length is not None:
        if cfg.max_length <= len(prompt):
            raise WarmstartError(
                f"max_length {cfg.max_length} leaves no room after {which} ({len(prompt)} tokens)",
                f"set max_length above {len(prompt)}, or leave it unset",
            )
        n = min(n, cfg.max_length - len(prompt))
    room = gen.max_length - 2 - len(prompt)  # [CLS] and [SEP] take two positions
    if n > room:
        raise WarmstartError(
            f"{which} ({len(prompt)} tokens) plus {n} new tokens, [CLS] and [SEP] exceed the model's "
            f"{gen.max_length} positions",
            f"lower max_new_tokens to {max(room, 0)} or shorten the prompt",
        )
    return n


def run_mlm_generate(
    path,
    prompts: list[str],
    cfg: GenerationConfig,
    sampling: str = "left-to-right",
    sweeps: int = SWEEPS,
    stream=None,
    show_special: bool = False,
) -> list[str]:
    """Generate from the masked-LM run or model directory ``path`` and print each prompt and its
    continuation (``num_return_sequences`` per prompt, prompt by prompt), cut before a ``stop`` string.
    ``path`` may be a SavedModel. Returns the printed texts."""
    stream = stream or sys.stdout
    if not prompts:
        raise WarmstartError("no prompt given", "pass --prompt TEXT or --file PROMPTS.txt")
    check_request(cfg, sampling, sweeps)
    gen = MaskedGenerator.from_run(path)
    tok = gen.tokenizer
    ids = [tok.encode(p) for p in prompts]
    counts = [new_tokens(gen, p, cfg, f"prompt {i + 1}" if len(ids) > 1 else "the prompt")
              for i, p in enumerate(ids)]  # fmt: skip
    generator = torch.Generator().manual_seed(cfg.seed)
    texts = []
    for text, prompt, n in zip(prompts, ids, counts):
        for _ in range(cfg.num_return_sequences):
            streamer = Streamer(tok, prompt, stream, not show_special)
            streamer.ids = gen.generate(prompt, n, cfg, sampling, generator, sweeps)
            texts.append(text + cut_at_stop(streamer.text(), cfg.stop))
            stream.write(texts[-1] + "\n")
    return texts
