"""The line that says what task.max_length cuts: its counts equal a full encoding's, for texts and for text
pairs, it names the longer settings up to the model's limit, and says nothing when nothing is cut."""

import re

from warmstart.tasks.truncation import truncation_line
from warmstart.tokenization.tokenizer import Tokenizer


def _full(tok, records, paired):
    pairs = [r["text_pair"] for r in records] if paired else None
    ids, _ = tok.encode_pairs([r["text"] for r in records], pairs, 100_000)
    return [len(x) for x in ids]


def test_counts_equal_the_full_encoding(small_tokenizer, wiki_extracts):
    tok = Tokenizer.load(small_tokenizer)
    singles = [{"text": t} for t in wiki_extracts[:200]]
    pairs = [
        {"text": a[:300], "text_pair": b[:300]} for a, b in zip(wiki_extracts[:200], wiki_extracts[200:400])
    ]
    for records, paired in ((singles, False), (pairs, True)):
        full = _full(tok, records, paired)
        line = truncation_line("labeled", records, tok, 128, 512)
        cut = sum(n > 128 for n in full)
        assert 0 < cut < len(records)
        assert line.startswith(f"task.max_length=128 cuts {cut:,} of 200 training texts ({cut / 200:.0%}; ")
        assert f"the longest has {max(full):,} tokens" in line
        kept = sum(n <= 256 for n in full) / 200
        assert (
            f"--max-length 256 keeps {kept:.0%} whole, 512 keeps" in line
            and "(512: the model's limit)" in line
        )


def test_nothing_cut_or_not_counted_says_nothing(small_tokenizer, wiki_extracts):
    tok = Tokenizer.load(small_tokenizer)
    short = [{"text": " ".join(t.split()[:5])} for t in wiki_extracts[:50]]
    assert truncation_line("labeled", short, tok, 128, 512) is None
    assert truncation_line("qa", [{"text": wiki_extracts[0]}], tok, 16, 512) is None  # QA: windows
    line = truncation_line("tagging", [{"text": wiki_extracts[0]}], tok, 16, None)  # no limit (T5)
    assert re.search(r"cuts 1 of 1 training texts \(100%; .*: --max-length 256 keeps", line)
