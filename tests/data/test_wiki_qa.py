"""wiki-qa: "What is TITLE?" -> the description where it occurs whole in the wiki-leads extract."""

import pytest

from warmstart.data.catalog import open_dataset
from warmstart.data.wiki_qa import find_answer, wiki_qa_records, wiki_qa_stats

QUALIFYING = 1314  # of 10,033 entries (9,862 with an extract and a description)


@pytest.fixture(scope="module")
def records():
    return list(wiki_qa_records())


def test_every_answer_offset_matches(records):
    assert len(records) == QUALIFYING
    for r in records:
        [answer] = r["answers"]
        start = answer["answer_start"]
        assert r["context"][start : start + len(answer["text"])] == answer["text"]
        assert r["text"] == r["context"] == r["split_key"]
        assert r["question"] == f"What is {r['id']}?"


def test_ids_are_unique_titles(records):
    assert len({r["id"] for r in records}) == len(records)


def test_stats():
    stats = wiki_qa_stats()
    assert stats["entries"] == 10033
    assert stats["with_description"] == 9862
    assert stats["qualifying"] == QUALIFYING
    assert stats["share"] == pytest.approx(QUALIFYING / 10033)
    assert stats["inside_word"] == 25


def test_contexts_are_wiki_leads_texts(records):
    leads = {r["text"] for r in open_dataset("wiki-leads").records("all")}
    assert all(r["split_key"] in leads for r in records)


def test_match_is_case_insensitive_whole_word_and_keeps_the_extract_text():
    found = find_answer("Lego is a brand of Plastic construction toys.", "plastic construction toy")
    assert found is None  # only inside the longer word "toys"
    found = find_answer("The action film is a Film genre in which...", "film genre")
    assert (found.group(0), found.start()) == ("Film genre", 21)
    assert find_answer("anything", "  ") is None
