"""Generate from a saved model: the texts of `warmstart generate`, ``Model.generate`` and a report's
samples; `warmstart serve` streams with the same special ids."""

from __future__ import annotations

import sys

from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, cut_at_stop, generate, prompt_ids
from warmstart.generation.streamer import Streamer
from warmstart.inference.fill_mask import has_mlm_head
from warmstart.inference.load import SavedModel
from warmstart.inference.mlm_generate import SWEEPS, run_mlm_generate
from warmstart.models.encoder_decoder import EncoderDecoder


def special_ids(config_json: dict, tokenizer) -> dict:
    """``generate``'s ``eos_id``, ``pad_id`` and ``decoder_start_id``: config.json's, else the tokenizer's."""
    eos = config_json.get("eos_token_id", tokenizer.eos_id)
    pad = next((i for i in (config_json.get("pad_token_id"), tokenizer.pad_id, eos) if i is not None), 0)
    return dict(eos_id=eos, pad_id=pad, decoder_start_id=config_json.get("decoder_start_token_id", pad))


def run_generate(
    path,
    prompts: list[str],
    cfg: GenerationConfig,
    stream=None,
    show_special=False,
    loaded=None,
    mlm_sampling: str | None = None,
    mlm_sweeps: int | None = None,
):
    """Generate from the run or model directory ``path`` and print one result per prompt (with
    ``num_return_sequences`` n, n per prompt, prompt by prompt): decoders the prompt and its continuation,
    encoder-decoders the output, each cut before a ``stop`` string. One prompt with greedy or sample (one
    text, no stop strings) streams. Returns the printed texts. ``stream``: default sys.stdout. ``loaded``:
    ``SavedModel.generator`` already loaded (the model on the device it generates on). A masked-LM run
    (an encoder with its MLM head) writes through inference/mlm_generate.py: ``mlm_sampling``
    left-to-right (its default) or gibbs, with ``mlm_sweeps`` (default 3)."""

    stream = stream or sys.stdout
    if not prompts:
        raise WarmstartError("no prompt given", "pass --prompt TEXT or --file PROMPTS.txt")
    if loaded is None:
        saved = SavedModel(path, prefer="final")
        if saved.task == "encoder" and has_mlm_head(saved.card.objective):
            sampling = mlm_sampling or "left-to-right"
            sweeps = SWEEPS if mlm_sweeps is None else mlm_sweeps
            return run_mlm_generate(saved, prompts, cfg, sampling, sweeps, stream, show_special)
        loaded = saved.generator
    if mlm_sampling is not None or mlm_sweeps is not None:
        raise WarmstartError(
            f"--mlm-sampling and --mlm-sweeps are for masked-LM runs; {path} generates left to right",
            "leave them out",
        )
    model, tokenizer, config_json = loaded
    ids = [prompt_ids(tokenizer, p, model) for p in prompts]
    kwargs = special_ids(config_json, tokenizer)
    eos = kwargs["eos_id"]
    decoder = not isinstance(model, EncoderDecoder)
    streamers = [Streamer(tokenizer, p if decoder else [], stream, not show_special) for p in ids]
    if len(prompts) == 1 and cfg.strategy != "beam" and cfg.num_return_sequences == 1 and not cfg.stop:
        started = False

        def on_step(tokens):  # the prompt is printed once it has passed every check
            nonlocal started
            if decoder and not started:
                stream.write(prompts[0])
            started = True
            if not (cfg.stop_on_eos and tokens[0] == eos):
                streamers[0].add(tokens[0])

        generate(model, ids, cfg, on_step=on_step, **kwargs)
        streamers[0].finish()
        return [(prompts[0] if decoder else "") + streamers[0].text()]
    texts = []
    text_of = (lambda new: tokenizer.decode(new, skip_special_tokens=not show_special)) if cfg.stop else None
    for k, new in enumerate(generate(model, ids, cfg, text_of=text_of, **kwargs)):
        i = k // cfg.num_return_sequences
        streamer = Streamer(tokenizer, ids[i] if decoder else [], stream, not show_special)
        streamer.ids = new
        texts.append((prompts[i] if decoder else "") + cut_at_stop(streamer.text(), cfg.stop))
        stream.write(texts[-1] + "\n")
    return texts
