"""Generate from a saved checkpoint (what `warmstart generate` runs)."""

from __future__ import annotations

import sys

from warmstart.checkpoints.load import load_generator
from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, generate, prompt_ids
from warmstart.generation.streamer import Streamer
from warmstart.models.encoder_decoder import EncoderDecoder


def run_generate(path, prompts: list[str], cfg: GenerationConfig, stream=None, show_special=False):
    """Generate from the run or model directory ``path`` and print one result per prompt: decoders the
    prompt and its continuation, encoder-decoders the output. One prompt with greedy or sample streams.
    Returns the printed texts. ``stream``: default sys.stdout."""

    stream = stream or sys.stdout
    if not prompts:
        raise WarmstartError("no prompt given", "pass --prompt TEXT or --file PROMPTS.txt")
    model, tokenizer, config_json = load_generator(path)
    ids = [prompt_ids(tokenizer, p, model) for p in prompts]
    eos = config_json.get("eos_token_id", tokenizer.eos_id)
    pad = next((i for i in (config_json.get("pad_token_id"), tokenizer.pad_id, eos) if i is not None), 0)
    kwargs = dict(eos_id=eos, pad_id=pad, decoder_start_id=config_json.get("decoder_start_token_id", pad))
    decoder = not isinstance(model, EncoderDecoder)
    streamers = [Streamer(tokenizer, p if decoder else [], stream, not show_special) for p in ids]
    if len(prompts) == 1 and cfg.strategy != "beam":
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
    for prompt, streamer, new in zip(prompts, streamers, generate(model, ids, cfg, **kwargs)):
        streamer.ids = new
        texts.append((prompt if decoder else "") + streamer.text())
        stream.write(texts[-1] + "\n")
    return texts
