"""CoNLL-2003 style reading and writing: columns, documents, round trips and clear errors."""

import random

import pytest

from warmstart.data.conll import read_conll, write_conll
from warmstart.errors import WarmstartError

CONLL_2003 = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O
to TO B-VP O
boycott VB I-VP O
British JJ B-NP B-MISC
lamb NN I-NP O
. . O O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER


-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
1996-08-22 CD I-NP O
"""


def test_reads_conll_2003(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(CONLL_2003, encoding="utf-8")
    records = list(read_conll(path))
    assert [r["tokens"] for r in records] == [
        ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
        ["Peter", "Blackburn"],
        ["BRUSSELS", "1996-08-22"],
    ]
    assert records[0]["tags"][:3] == ["B-ORG", "O", "B-MISC"]  # the LAST column, not the chunk tag
    assert records[1]["tags"] == ["B-PER", "I-PER"]
    assert [r["doc"] for r in records] == [0, 0, 1]
    assert records[1]["text"] == "Peter Blackburn"


def test_no_docstart_no_doc_key_and_no_trailing_blank_line(tmp_path):
    path = tmp_path / "iob1.conll"
    path.write_text("Peter\tI-PER\nBlackburn\tI-PER\n\n\n\nin O\nBonn\tI-LOC", encoding="utf-8")
    records = list(read_conll(path))
    assert [r["tags"] for r in records] == [["I-PER", "I-PER"], ["O", "I-LOC"]]
    assert all("doc" not in r for r in records)


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_text(CONLL_2003.replace("call NN I-NP O", "call"), encoding="utf-8")
    with pytest.raises(WarmstartError) as err:
        list(read_conll(path))
    message = str(err.value)
    assert str(path) in message and "line 6" in message and "expected 4" in message and "found 1" in message
    assert err.value.fix


def test_single_column_file_and_missing_file(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("just\nwords\n", encoding="utf-8")
    with pytest.raises(WarmstartError, match="line 1"):
        list(read_conll(path))
    with pytest.raises(WarmstartError, match="no CoNLL file"):
        read_conll(tmp_path / "missing.conll")


def test_round_trip_on_real_sentences(tmp_path, wiki_extracts):
    rng = random.Random(0)
    tags = ["O", "O", "O", "B-PER", "I-PER", "B-GPE", "I-ORG"]
    records = []
    for doc, text in enumerate(wiki_extracts[:30]):
        for sentence in text.split(". ")[:4]:
            tokens = sentence.split()
            if tokens:
                chosen = [rng.choice(tags) for _ in tokens]
                records.append({"text": " ".join(tokens), "tokens": tokens, "tags": chosen, "doc": doc})
    path = write_conll(records, tmp_path / "out" / "silver.conll")
    assert list(read_conll(path)) == records
    assert path.read_text(encoding="utf-8").count("-DOCSTART-") == 30
    assert [p.name for p in path.parent.iterdir()] == ["silver.conll"]  # no temp file left behind
    # without "doc": no -DOCSTART- lines, and the records come back without it
    plain = [{k: v for k, v in r.items() if k != "doc"} for r in records]
    write_conll(plain, path)  # replaces the file
    assert list(read_conll(path)) == plain


def test_write_refuses_whitespace_and_keeps_the_old_file(tmp_path):
    path = write_conll([{"tokens": ["a"], "tags": ["O"]}], tmp_path / "x.conll")
    with pytest.raises(WarmstartError, match="whitespace"):
        write_conll([{"tokens": ["a b"], "tags": ["O"]}], path)
    with pytest.raises(WarmstartError, match="1 tokens and 2 tags"):
        write_conll([{"tokens": ["a"], "tags": ["O", "O"]}], path)
    assert path.read_text(encoding="utf-8") == "a O\n\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.conll"]
