"""Text generation for the server: a gpt2, t5 or bart run (`warmstart pretrain`), or a text_to_text
finetuned run; the text is streamed as it grows, in pieces that join to the whole answer."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

from warmstart.errors import WarmstartError
from warmstart.generation.decode import GenerationConfig, generate, prompt_ids
from warmstart.generation.streamer import Streamer
from warmstart.inference.generate import special_ids
from warmstart.inference.load import SavedModel
from warmstart.models.encoder_decoder import EncoderDecoder

OPTIONS = ("max_new_tokens", "strategy", "temperature", "top_k", "top_p", "seed")


class Stopped(Exception):
    """Raised inside generation when the client went away or the time limit passed."""


class _Pieces:
    """The stream ``Streamer`` writes to: each piece of text goes into a queue."""

    def __init__(self, out: queue.Queue):
        self.out = out

    def write(self, text: str) -> None:
        if text:
            self.out.put(("text", text))

    def flush(self) -> None:
        pass


class GeneratorModel:
    task = "generation"
    streams = True

    def __init__(self, model, tokenizer, config_json: dict, make_prompt, max_new_tokens: int = 50):
        self.model, self.tokenizer, self.make_prompt = model.eval(), tokenizer, make_prompt
        self.decoder = not isinstance(model, EncoderDecoder)
        self.ids = special_ids(config_json, tokenizer)
        self.max_new_tokens = max_new_tokens
        self.lock = threading.Lock()

    @classmethod
    def pretrained(cls, saved: SavedModel) -> GeneratorModel:
        model, tokenizer, config_json = saved.generator
        return cls(model, tokenizer, config_json, lambda text: prompt_ids(tokenizer, text, model))

    @classmethod
    def text_to_text(cls, finetuned) -> GeneratorModel:
        """The model of a finetuned text_to_text run (``SavedModel.finetuned``), prompted as in its training
        (prefix, separator)."""
        unit, task, tokenizer = finetuned.unit, finetuned.task, finetuned.tokenizer

        def make_prompt(text: str) -> list[int]:
            return task.encode([{"text": text}], tokenizer, [], "the input").sources[0]

        config_json = {"eos_token_id": tokenizer.eos_id, "pad_token_id": tokenizer.pad_id,
                       "decoder_start_token_id": task.decoder_start}  # fmt: skip
        return cls(unit.model, tokenizer, config_json, make_prompt, task.cfg.max_target_length)

    def info(self) -> dict:
        return {"max_new_tokens": self.max_new_tokens, "echoes_prompt": self.decoder}

    def config(self, fields: dict) -> GenerationConfig:
        chosen = {k: fields[k] for k in OPTIONS if fields.get(k) is not None}
        return GenerationConfig(**{"max_new_tokens": self.max_new_tokens, **chosen})

    def predict(self, fields: dict, deadline: float | None = None) -> dict:
        return {"text": fields["text"], "generated": "".join(self.stream(fields, deadline))}

    def stream(self, fields: dict, deadline: float | None = None, cancelled=None) -> Iterator[str]:
        """Pieces of the generated text (the prompt not included) as they come. Generation runs in a
        thread and stops when ``cancelled`` (a threading.Event) is set or ``deadline`` (time.monotonic)
        passes; a WarmstartError (bad options, a prompt too long) is raised here."""
        cfg = self.config(fields)
        prompt = self.make_prompt(fields["text"])
        out: queue.Queue = queue.Queue()
        cancelled = cancelled or threading.Event()
        thread = threading.Thread(target=self._run, args=(prompt, cfg, out, deadline, cancelled), daemon=True)
        thread.start()
        try:
            while True:
                what, value = out.get()
                if what == "text":
                    yield value
                elif what == "error":
                    raise value
                else:
                    return
        finally:
            cancelled.set()

    def _run(self, prompt, cfg, out: queue.Queue, deadline, cancelled) -> None:
        streamer = Streamer(self.tokenizer, prompt if self.decoder else [], _Pieces(out), True)
        eos = self.ids["eos_id"]

        def on_step(tokens):
            if cancelled.is_set() or (deadline is not None and time.monotonic() > deadline):
                raise Stopped()
            if not (cfg.stop_on_eos and tokens[0] == eos):
                streamer.add(tokens[0])

        try:
            with self.lock:
                new = generate(self.model, [prompt], cfg, on_step=on_step, **self.ids)
            if cfg.strategy == "beam":  # beam search has no steps to stream: all at the end
                streamer.ids = new[0]
            text = streamer.text()
            out.put(("text", text[len(streamer.shown) :] if text.startswith(streamer.shown) else ""))
            out.put(("done", None))
        except Stopped:
            stopped = WarmstartError(
                "generation stopped: the time limit passed or the client left",
                "ask for fewer new tokens, or raise serve --timeout",
            )
            out.put(("error", stopped))
        except Exception as e:  # noqa: BLE001 - handed to the reader, which raises it
            out.put(("error", e))
