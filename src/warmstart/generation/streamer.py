"""Print decoded text as it grows."""

from __future__ import annotations


class Streamer:
    """Writes the text of the tokens so far as it grows: the whole sequence is decoded each time and only
    the new suffix printed, held back while it ends in a partial character (byte-level BPE pieces)."""

    def __init__(self, tokenizer, prefix: list[int], stream, skip_special: bool):
        self.tok, self.prefix, self.stream, self.skip = tokenizer, prefix, stream, skip_special
        self.base = tokenizer.decode(prefix, skip_special_tokens=skip_special)
        self.ids: list[int] = []
        self.shown = ""

    def text(self) -> str:
        full = self.tok.decode(self.prefix + self.ids, skip_special_tokens=self.skip)
        if full.startswith(self.base):
            return full[len(self.base) :]
        return self.tok.decode(self.ids, skip_special_tokens=self.skip)

    def add(self, token: int) -> None:
        self.ids.append(token)
        text = self.text()
        if not text.endswith("\ufffd") and text.startswith(self.shown):
            self.stream.write(text[len(self.shown) :])
            self.stream.flush()
            self.shown = text

    def finish(self) -> None:
        text = self.text()
        self.stream.write((text[len(self.shown) :] if text.startswith(self.shown) else "") + "\n")
        self.stream.flush()
