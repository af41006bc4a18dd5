"""The line that says what task.max_length cuts: its counts equal a full encoding's, for texts and for text
pairs, it names the longer settings up to the model's limit, and says nothing when nothing is cut."""

import re

from warmstart.tasks.truncation import longer, truncation_line
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
        assert f"--max-length 256 keeps {kept:.0%} whole" in line
        assert ("512 keeps" in line and "(512: the model's limit)" in line) == (kept < 0.99)


def test_the_settings_named_are_the_next_length_and_the_first_that_keeps_99_percent():
    short = [40] * 99 + [61]  # all fit 64: 64 alone, not the model's 512
    assert longer(short, 32, 512) == [64]
    spread = [100] * 90 + [300] * 9 + [2000]  # 99% fit 512 (the limit), the next length is 256
    assert longer(spread, 128, 512) == [256, 512]
    assert longer(spread, 128, None) == [256, 512]  # no limit (T5): still 512, where 99% fit
    assert longer([5000] * 10, 128, None) == [256, 8192]  # no limit: the first power of two that fits
    assert longer([99999] * 10, 128, None) == [256]  # none fits: the next length alone
    assert longer(spread, 512, 512) == []  # already at the model's limit: nothing longer to name


def test_nothing_cut_or_not_counted_says_nothing(small_tokenizer, wiki_extracts):
    tok = Tokenizer.load(small_tokenizer)
    short = [{"text": " ".join(t.split()[:5])} for t in wiki_extracts[:50]]
    assert truncation_line("labeled", short, tok, 128, 512) is None
    assert truncation_line("qa", [{"text": wiki_extracts[0]}], tok, 16, 512) is None  # QA: windows
    line = truncation_line("tagging", [{"text": wiki_extracts[0]}], tok, 16, None)  # no limit (T5)
    assert re.search(r"cuts 1 of 1 training texts \(100%; .*: --max-length 32 keeps", line)
