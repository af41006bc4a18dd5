"""A report page built from a few block kinds, written as one self-contained HTML file and as Markdown.

The HTML needs no network: inline CSS, no scripts, PNG plots embedded as base64 data URIs; the inline
Markdown of texts and cells (`code`, **bold**) is rendered. The Markdown (report.md beside it, for terminals
and pull requests) links the same PNGs, written next to it. In both, text columns are left-aligned and
number columns right-aligned.
"""

from __future__ import annotations

import base64
import html
import os
import re
from pathlib import Path

from warmstart.atomic import write_atomic

CSS = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th.n, td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
code { background: #f3f3f3; padding: 0 0.2rem; font-size: 0.92em; }
pre { background: #f7f7f7; padding: 0.6rem; overflow-x: auto; font-size: 12.5px; }
img { max-width: 100%; display: block; margin: 0.6rem 0; }
"""
_NUM = r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?"
NUMBER = re.compile(rf"{_NUM}(?: \({_NUM}-{_NUM}\))?|{_NUM}(?:, {_NUM})+")  # 0.74 (0.70-0.75); +1.2, -0.3
NO_VALUE = {"", "-", "nan", "undefined", "None"}
CODE = re.compile(r"(`[^`]+`)")
BOLD = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")


def inline(text: str) -> str:
    """Escaped HTML of a line of Markdown: `code` and **bold** rendered, nothing else interpreted."""
    out = []
    for k, part in enumerate(CODE.split(str(text))):  # odd parts are code spans: nothing inside is Markdown
        if k % 2:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            out.append(BOLD.sub(r"<strong>\1</strong>", html.escape(part)))
    return "".join(out)


def numeric_columns(rows: list[list[str]]) -> list[bool]:
    """Per column: most cells with a value are numbers (or a median with its range, or a list of numbers);
    such a column is right-aligned, its odd cell ('step 900', 'never') with it."""
    width = max((len(r) for r in rows), default=0)
    found = []
    for k in range(width):
        cells = [r[k].strip() for r in rows if k < len(r) and r[k].strip() not in NO_VALUE]
        found.append(2 * sum(bool(NUMBER.fullmatch(c)) for c in cells) > len(cells))
    return found


class Page:
    """Blocks in order: heading, text, table, image (a PNG file), code (config files)."""

    def __init__(self, title: str):
        self.title = title
        self.blocks: list[tuple] = []

    def heading(self, text: str) -> None:
        self.blocks.append(("heading", text))

    def text(self, text: str) -> None:
        self.blocks.append(("text", text))

    def table(self, header: list[str], rows: list[list], note: str | None = None) -> None:
        self.blocks.append(("table", [str(h) for h in header], [[str(c) for c in r] for r in rows]))
        if note:
            self.blocks.append(("text", note))

    def markdown_table(self, text: str) -> None:
        """A Markdown table (as warmstart's table helpers write them) and the lines after it as text."""
        lines = text.strip().splitlines()
        rows = [
            [c.strip().strip("*") for c in ln.strip().strip("|").split("|")] for ln in lines if ln[:1] == "|"
        ]
        rows = [r for r in rows if not all(set(c) <= set("-: ") for c in r)]
        rest = " ".join(ln for ln in lines if ln.strip() and ln[:1] != "|")
        self.table(rows[0], rows[1:], rest or None)

    def image(self, path: Path, alt: str) -> None:
        self.blocks.append(("image", Path(path), alt))

    def code(self, text: str, title: str) -> None:
        self.blocks.append(("code", text, title))

    def html(self) -> str:
        e = html.escape
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{e(self.title)}</title><style>{CSS}</style></head><body>",
            f"<h1>{e(self.title)}</h1>",
        ]
        for block, *a in self.blocks:
            if block == "heading":
                parts.append(f"<h2>{e(a[0])}</h2>")
            elif block == "text":
                parts.append(f"<p>{inline(a[0])}</p>")
            elif block == "table":
                parts.append(_html_table(a[0], a[1]))
            elif block == "image":
                data = base64.b64encode(a[0].read_bytes()).decode("ascii")
                parts.append(f'<img alt="{e(a[1])}" src="data:image/png;base64,{data}">')
            elif block == "code":
                parts.append(f"<details><summary>{e(a[1])}</summary><pre>{e(a[0])}</pre></details>")
        parts.append("</body></html>")
        return "\n".join(parts) + "\n"

    def markdown(self, base: Path) -> str:
        """Markdown; image links relative to ``base`` (the directory report.md is written to)."""
        out = [f"# {self.title}", ""]
        for block, *a in self.blocks:
            if block == "heading":
                out += [f"## {a[0]}", ""]
            elif block == "text":
                out += [a[0], ""]
            elif block == "table":
                numbers = numeric_columns(a[1])
                out.append("| " + " | ".join(a[0]) + " |")
                out.append("|" + "|".join("---:" if n else ":---" for n in numbers) + "|")
                out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in a[1]]
                out.append("")
            elif block == "image":
                out += [f"![{a[1]}]({Path(os.path.relpath(a[0], base)).as_posix()})", ""]
            elif block == "code":
                out += [
                    f"<details><summary>{a[1]}</summary>",
                    "",
                    "```",
                    a[0].rstrip(),
                    "```",
                    "",
                    "</details>",
                    "",
                ]
        return "\n".join(out)

    def write(self, out: Path) -> tuple[Path, Path]:
        """``out`` (HTML) and report.md beside it (OUT.md when ``out`` is not report.html)."""
        out = Path(out)
        md = out.with_suffix(".md")
        write_atomic(out, lambda fh: fh.write(self.html()), text=True)
        write_atomic(md, lambda fh: fh.write(self.markdown(out.parent)), text=True)
        return out, md


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    numbers = numeric_columns(rows)

    def cell(tag: str, k: int, text: str) -> str:
        right = ' class="n"' if k < len(numbers) and numbers[k] else ""
        return f"<{tag}{right}>{inline(text)}</{tag}>"

    head = "".join(cell("th", k, h) for k, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", k, c) for k, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
