"""GPT-2's byte-level alphabet: each of the 256 byte values written as one printable character.

Byte-level BPE (GPT-2, RoBERTa, ``warmstart tokenizer train --kind bpe``) works on the UTF-8 bytes of the
text, not on characters, so no text is ever unknown. To keep the vocabulary and merge list printable, every
byte is spelled as one character: printable Latin-1 bytes as themselves, the others (space, control bytes,
0x7F-0xA0, 0xAD) as the characters from U+0100 on. So a space is ``Ġ`` (U+0120), a newline ``Ċ``, and
``é`` (bytes C3 A9) is the two symbols ``Ã©``. This is Radford et al.'s ``bytes_to_unicode`` (GPT-2's
encoder.py), the table the ``tokenizers`` ByteLevel pre-tokenizer uses.
"""

from __future__ import annotations

from functools import cache


@cache
def byte_to_char() -> dict[int, str]:
    """The 256 bytes -> their printable characters (GPT-2's ``bytes_to_unicode``)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in kept}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@cache
def char_to_byte() -> dict[str, int]:
    return {c: b for b, c in byte_to_char().items()}


def to_bytes(symbol: str) -> bytes | None:
    """The bytes a byte-level symbol stands for; None when a character is not in the alphabet."""
    table = char_to_byte()
    if any(c not in table for c in symbol):
        return None
    return bytes(table[c] for c in symbol)


def readable(symbol: str) -> str:
    """A byte-level symbol as text: its bytes decoded as UTF-8 where they are whole characters, the others as
    ``<C3>`` (one byte of a character split across symbols). ``Ġthe`` -> `` the``, ``Ã`` -> ``<C3>``."""
    raw = to_bytes(symbol)
    if raw is None:
        return symbol
    text = raw.decode("utf-8", errors="surrogateescape")  # an undecodable byte b -> U+DC00 + b
    return "".join(f"<{ord(c) - 0xDC00:02X}>" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)


def legend(symbols: list[str]) -> list[str]:
    """A line for each character of ``symbols`` that is not the byte it looks like: ``Ġ = byte 0x20 (space)``,
    ``Ã = byte 0xC3 (a byte of a multi-byte UTF-8 character)``."""
    names = {0x20: "space", 0x0A: "newline", 0x09: "tab", 0x0D: "carriage return"}
    seen: dict[str, int] = {}
    for s in symbols:
        for c in s:
            b = char_to_byte().get(c)
            if b is not None and (chr(b) != c or b >= 0x80):
                seen.setdefault(c, b)
    lines = []
    for c, b in sorted(seen.items(), key=lambda cb: cb[1]):
        what = names.get(b) or ("a byte of a multi-byte UTF-8 character" if b >= 0x80 else "a control byte")
        lines.append(f"{c} = byte 0x{b:02X} ({what})")
    return lines
