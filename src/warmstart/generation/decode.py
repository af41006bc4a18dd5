"""Text generation from decoders (GPT-2) and encoder-decoders (T5, BART): greedy, sampling, beam search.

Decoder-only prompts are left-padded into one batch with an attention mask (positions count real tokens
only); encoder-decoder inputs are right-padded, encoded once, and the decoder starts from its start token.
With ``use_cache`` each step feeds only the new tokens and the model's key/value cache (cross-attention keys
and values of the encoder output included); without, the whole sequence is recomputed: the same tokens.

``repetition_penalty`` (CTRL's, applied as transformers applies it to the logits) lowers every token already
in the sequence (a decoder's prompt and output, an encoder-decoder's output). ``num_return_sequences`` gives
several texts per prompt (sampling: independent draws; beam search: the best hypotheses), prompt by prompt.
``stop`` strings end a row once its decoded text holds one (``text_of`` turns a row's tokens into text);
``cut_at_stop`` then cuts the text before the string, as beam search's texts are cut after the search.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from warmstart.config import opt
from warmstart.errors import WarmstartError
from warmstart.generation.beam_search import beam_search
from warmstart.models.encoder_decoder import EncoderDecoder
from warmstart.numbers import check_numbers

STRATEGIES = ("greedy", "sample", "beam")


@dataclass
class GenerationConfig:
    max_new_tokens: int = opt(50, "most new tokens per prompt")
    max_length: int | None = opt(None, "cap on prompt + new tokens (decoders), on the output (enc-dec)")
    strategy: str = opt("greedy", "greedy, sample or beam")
    temperature: float = opt(1.0, "sampling: divide the logits by this (> 0; lower is more conservative)")
    top_k: int = opt(0, "sampling: keep only the k most likely tokens (0 = off)")
    top_p: float = opt(1.0, "sampling: keep the smallest set of tokens whose probability reaches p (1 = off)")
    num_beams: int = opt(4, "beam search: hypotheses kept per prompt")
    length_penalty: float = opt(1.0, "beam search: score = sum of log-probs / length ** length_penalty")
    stop_on_eos: bool = opt(True, "end a sequence at the end-of-sequence token")
    use_cache: bool = opt(True, "reuse the key/value cache (false: recompute everything each step)")
    seed: int = opt(0, "seed of the sampling random generator")
    repetition_penalty: float = opt(
        1.0,
        "lower tokens already in the sequence: a positive logit divided by this, a negative one "
        "multiplied (> 0; 1 = off; 1.2 is CTRL's value)",
    )
    num_return_sequences: int = opt(
        1, "texts per prompt: independent draws (sample) or the best hypotheses (beam, at most num_beams)"
    )
    stop: list[str] = opt([], "end a text where one of these strings first appears (the string left out)")

    def __post_init__(self):
        rules = [  # (valid, key, what it must be, an example of a good value)
            (self.strategy in STRATEGIES, "strategy", f"one of {', '.join(STRATEGIES)}", "strategy=sample"),
            (self.max_new_tokens >= 1, "max_new_tokens", "at least 1", "max_new_tokens=50"),
            (self.max_length is None or self.max_length >= 1, "max_length", "at least 1", "max_length=128"),
            (self.temperature > 0, "temperature", "above 0 (greedy takes the likeliest)", "temperature=0.7"),
            (0 < self.top_p <= 1, "top_p", "in (0, 1], 1 = off", "top_p=0.9"),
            (self.top_k >= 0, "top_k", "0 (off) or positive", "top_k=50"),
            (self.num_beams >= 1, "num_beams", "at least 1", "num_beams=4"),
            (self.repetition_penalty > 0, "repetition_penalty", "above 0 (1: off)", "repetition_penalty=1.2"),
            (self.num_return_sequences >= 1, "num_return_sequences", "at least 1", "num_return_sequences=2"),
            (all(self.stop), "stop", "a list of non-empty strings", "stop=[\"\\n\"]"),
        ]  # fmt: skip
        for ok, key, must, example in rules:
            if not ok:
                raise WarmstartError(
                    f"{key} must be {must}, got {getattr(self, key)!r}", f"use e.g. {example}"
                )
        check_numbers(self)  # seeds torch can take, counts in range: built by from_dict or by the server
        n = self.num_return_sequences
        if n > 1 and self.strategy == "greedy":
            raise WarmstartError(
                f"num_return_sequences={n} with greedy decoding would give {n} copies of one text",
                "sample (strategy=sample) or search (strategy=beam) for several texts",
            )
        if self.strategy == "beam" and n > self.num_beams:
            raise WarmstartError(
                f"num_return_sequences={n} is more than the {self.num_beams} hypotheses beam search keeps",
                f"set num_beams={n} or more",
            )


def _select(obj, idx):
    """Rows ``idx`` (dim 0) of every tensor in a nested cache."""
    if obj is None:
        return None
    if isinstance(obj, torch.Tensor):
        return obj.index_select(0, idx)
    return type(obj)(_select(o, idx) for o in obj)


def _pad(prompts, value, left, device):
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), value, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        cols = slice(width - len(p), width) if left else slice(0, len(p))
        ids[i, cols], mask[i, cols] = torch.tensor(p, dtype=torch.long), 1
    return ids.to(device), mask.to(device)


class _DecoderState:
    """Left-padded prompts, their mask and the cache; ``logits(new)`` appends ``new`` and returns (B, V)."""

    def __init__(self, model, prompts, pad_id, use_cache, device):
        self.model, self.use_cache, self.past = model, use_cache, None
        self.ids, self.mask = _pad(prompts, pad_id, True, device)

    def logits(self, new=None):
        if new is not None:
            self.ids = torch.cat([self.ids, new[:, None]], 1)
            self.mask = torch.cat([self.mask, torch.ones_like(new)[:, None]], 1)
        if self.past is not None:
            hidden, present = self.model.decode(new[:, None], self.mask, self.past)
        else:
            hidden, present = self.model.decode(self.ids, self.mask)
        self.past = present if self.use_cache else None
        return self.model.lm_logits(hidden[:, -1]).float()

    def reorder(self, idx):
        self.ids, self.mask, self.past = _select((self.ids, self.mask, self.past), idx)

    def seen(self):
        """(ids, mask) of the tokens in each row so far (the prompt's included, padding masked)."""
        return self.ids, self.mask


class _Seq2SeqState:
    """Right-padded inputs encoded once; the decoder sequence grows from the start token."""

    def __init__(self, model, prompts, pad_id, start_id, use_cache, device):
        self.model, self.use_cache, self.past = model, use_cache, None
        src, self.src_mask = _pad(prompts, pad_id, False, device)
        self.memory = model.encode(src, self.src_mask)
        self.ids = torch.full((len(prompts), 1), start_id, dtype=torch.long, device=device)

    def logits(self, new=None):
        if new is not None:
            self.ids = torch.cat([self.ids, new[:, None]], 1)
        step_ids = new[:, None] if self.past is not None else self.ids
        hidden, present = self.model.decode(step_ids, self.memory, self.src_mask, self.past)
        self.past = present if self.use_cache else None
        return self.model.lm_logits(hidden[:, -1]).float()

    def reorder(self, idx):
        self.memory, self.src_mask, self.ids, self.past = _select(
            (self.memory, self.src_mask, self.ids, self.past), idx
        )

    def seen(self):
        """(ids, mask) of the decoder's tokens so far (its start token included, as transformers counts)."""
        return self.ids, torch.ones_like(self.ids)


class _Penalized:
    """A decoding state whose logits lower the tokens already in each row (``repetition_penalty``)."""

    def __init__(self, state, penalty: float):
        self.state, self.penalty = state, penalty

    def logits(self, new=None):
        logits = self.state.logits(new)
        ids, mask = self.state.seen()
        return penalize(logits, ids, mask, self.penalty)

    def reorder(self, idx):
        self.state.reorder(idx)


def penalize(logits, ids, mask, penalty: float):
    """(B, V) logits with each token that occurs (mask 1) in its row's ``ids`` divided by ``penalty`` when
    positive, multiplied when negative (CTRL, Keskar et al. 2019; transformers' RepetitionPenalty)."""
    counts = torch.zeros_like(logits).scatter_add_(1, ids, mask.to(logits.dtype))
    lowered = torch.where(logits < 0, logits * penalty, logits / penalty)
    return torch.where(counts > 0, lowered, logits)


def cut_at_stop(text: str, stops) -> str:
    """``text`` before the first place one of the ``stops`` strings occurs (all of it when none does)."""
    ends = [text.find(s) for s in stops or () if s and s in text]
    return text[: min(ends)] if ends else text


def _limits(model, prompts, cfg) -> list[int]:
    """New tokens allowed per prompt by max_new_tokens, max_length and the model's positions; a prompt or a
    cap the model cannot hold raises WarmstartError."""
    enc_dec = isinstance(model, EncoderDecoder)
    key = "max_position_embeddings" if enc_dec else "n_positions"
    context = getattr(getattr(model, "config", None), key, None)
    limits = []
    for i, p in enumerate(prompts):
        which = f"prompt {i + 1}" if len(prompts) > 1 else "the prompt"
        used = 0 if enc_dec else len(p)  # positions of the generated sequence the prompt takes
        if not p:
            raise WarmstartError(f"{which} is empty", "give at least one word of text")
        if context is not None and len(p) > context:
            raise WarmstartError(f"{which} has {len(p)} tokens, more than the model's context of {context}",
                                 "shorten it")  # fmt: skip
        if cfg.max_length is not None and cfg.max_length <= used:
            raise WarmstartError(f"max_length {cfg.max_length} leaves no room after {which} ({used} tokens)",
                                 f"set max_length above {used}, or leave it unset")  # fmt: skip
        n = min(cfg.max_new_tokens, cfg.max_length - used if cfg.max_length else cfg.max_new_tokens)
        if context is not None and used + n > context:
            what = f"{which} ({used} tokens) plus {n} new tokens" if used else f"{n} new tokens"
            key = "max_new_tokens" if n == cfg.max_new_tokens else "max_length"
            raise WarmstartError(f"{what} exceed the model's context of {context}",
                                 f"lower {key} to {context - used if n == cfg.max_new_tokens else context}"
                                 + (" or shorten the prompt" if used else ""))  # fmt: skip
        limits.append(n)
    return limits


def choose(logits, cfg, generator):
    """(B,) next tokens: argmax, or a draw after temperature, top-k and top-p (nucleus) filtering."""
    if cfg.strategy == "greedy":
        return logits.argmax(-1)
    logits = logits / cfg.temperature
    if cfg.top_k:
        kth = logits.topk(min(cfg.top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if cfg.top_p < 1:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(-1)
        drop = probs.cumsum(-1) - probs >= cfg.top_p  # the tokens before these already reach p
        drop[:, 0] = False
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    probs = logits.softmax(-1)  # a draw: argmax of p / Exp(1) noise (the same noise whatever the values)
    noise = torch.empty_like(probs).exponential_(1.0, generator=generator)
    return (probs / noise).argmax(-1)


def generate(model, prompts: list[list[int]], cfg: GenerationConfig, *, eos_id: int | None, pad_id: int,
             decoder_start_id: int | None = None, on_step=None, text_of=None) -> list[list[int]]:  # fmt: skip
    """The new tokens of each prompt (EOS excluded); with ``num_return_sequences`` n, n results per prompt,
    prompt by prompt (``len(prompts) * n`` lists). ``on_step(tokens)`` gets each step's token per row
    (``pad_id`` for rows already finished); it is not called by beam search, whose tokens are final only
    at the end. ``text_of(tokens)``: a row's text, to end rows at ``cfg.stop`` strings (greedy, sample)."""
    if not prompts:
        return []
    enc_dec = isinstance(model, EncoderDecoder)
    if enc_dec and decoder_start_id is None:
        raise WarmstartError("an encoder-decoder needs a decoder start token", "pass decoder_start_id")
    limits = _limits(model, prompts, cfg)
    context = None if enc_dec else getattr(getattr(model, "config", None), "n_positions", None)
    if context is not None and len(prompts) > 1 and max(map(len, prompts)) + max(limits) > context:
        # the left-padded batch would outgrow the context although each prompt fits: one at a time
        one = dict(
            eos_id=eos_id, pad_id=pad_id, decoder_start_id=decoder_start_id, on_step=on_step, text_of=text_of
        )
        return [seq for p in prompts for seq in generate(model, [p], cfg, **one)]
    n = cfg.num_return_sequences
    if n > 1 and cfg.strategy != "beam":  # independent draws: each prompt n times in the batch
        prompts, limits = [p for p in prompts for _ in range(n)], [x for x in limits for _ in range(n)]
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            state: _DecoderState | _Seq2SeqState | _Penalized
            if enc_dec:
                state = _Seq2SeqState(model, prompts, pad_id, decoder_start_id, cfg.use_cache, device)
            else:
                state = _DecoderState(model, prompts, pad_id, cfg.use_cache, device)
            if cfg.repetition_penalty != 1:
                state = _Penalized(state, cfg.repetition_penalty)
            stop = eos_id if cfg.stop_on_eos else None
            if cfg.strategy == "beam":
                return beam_search(state, limits, cfg.num_beams, cfg.length_penalty, stop, pad_id, n)
            return _step_by_step(state, cfg, limits, stop, pad_id, device, on_step, text_of)
    finally:
        model.train(was_training)


def _step_by_step(state, cfg, limits, stop, pad_id, device, on_step, text_of=None):
    generator = torch.Generator(device=device).manual_seed(cfg.seed)
    out: list[list[int]] = [[] for _ in limits]
    done = [False] * len(limits)
    logits = state.logits()
    while True:
        tokens = choose(logits, cfg, generator).tolist()
        for i, t in enumerate(tokens):
            if done[i]:
                tokens[i] = pad_id
            elif t == stop:
                done[i] = True
            else:
                out[i].append(t)
                done[i] = len(out[i]) >= limits[i] or _stopped(out[i], cfg.stop, text_of)
        if on_step is not None:
            on_step(tokens)
        if all(done):
            return out
        logits = state.logits(torch.tensor(tokens, device=device))


def _stopped(tokens: list[int], stops: list[str], text_of) -> bool:
    """Whether a row's text already holds one of the stop strings."""
    if not stops or text_of is None:
        return False
    text = text_of(tokens)
    return any(s in text for s in stops)


def prompt_ids(tokenizer, text: str, model) -> list[int]:
    """A prompt as the model saw text in training: a decoder-only model (gpt2) ``</s> text`` (a document
    start in the packed stream), t5 ``text </s>``, a ``bos_first`` model (bart) ``<s> text </s>`` (missing
    special tokens are left out). ``model``: anything with the capability attributes of a model class."""
    ids = tokenizer.encode(text)
    if model.decoder_only:
        return [tokenizer.eos_id if tokenizer.eos_id is not None else tokenizer.doc_sep_id] + ids
    before = [tokenizer.bos_id] if model.bos_first and tokenizer.bos_id is not None else []
    return before + ids + ([tokenizer.eos_id] if tokenizer.eos_id is not None else [])
