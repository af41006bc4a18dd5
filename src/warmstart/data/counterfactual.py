"""Counterfactual data augmentation (CDA; Lu, Mardziel, Wu, Amancharla and Datta 2018, "Gender Bias in Neural
Natural Language Processing"; Zhao, Wang, Yatskar, Ordonez and Chang 2018, "Gender Bias in Coreference
Resolution"): each training text gets a copy with its gendered words swapped both ways (he <-> she,
man <-> woman, king <-> queen, ...), keeping each word's case (he -> she, He -> She, HE -> SHE).

"her" is both the object (him) and the possessive (his) form. It is read as possessive, "his", when the
next word follows it after spaces only and is not a word that starts a new phrase (an article, a
preposition, a conjunction, a pronoun: ``PHRASE_STARTS``), as in "her book", "her own"; otherwise it is
the object, "him" ("saw her.", "gave her a book", "told her that"). The same rule sends "his" to "her"
before a word ("his book") and to "hers" otherwise ("the book is his."). A verb after an object ("saw her
leave") is read as possessive: a rule on the next word only, without a tagger. First names are not
swapped (Zhao et al. swap them too).

Only the words of the text change: a record's labels stay as they were, and a tagging record is swapped
token by token, so its tags stay aligned. Extractive QA is refused: its answers are character offsets into
the context, which a swap moves.
"""

from __future__ import annotations

import re

from warmstart.errors import WarmstartError

PAIRS = (  # (male, female), one word each; "his"/"him"/"her"/"hers" are handled apart (module docstring)
    ("he", "she"), ("himself", "herself"), ("man", "woman"), ("men", "women"), ("boy", "girl"),
    ("boys", "girls"), ("father", "mother"), ("fathers", "mothers"), ("son", "daughter"),
    ("sons", "daughters"), ("brother", "sister"), ("brothers", "sisters"), ("husband", "wife"),
    ("husbands", "wives"), ("king", "queen"), ("kings", "queens"), ("prince", "princess"),
    ("princes", "princesses"), ("uncle", "aunt"), ("uncles", "aunts"), ("nephew", "niece"),
    ("nephews", "nieces"), ("grandfather", "grandmother"), ("grandson", "granddaughter"),
    ("grandpa", "grandma"), ("dad", "mom"), ("dads", "moms"), ("daddy", "mommy"), ("mr", "mrs"),
    ("sir", "madam"), ("gentleman", "lady"), ("gentlemen", "ladies"), ("male", "female"),
    ("males", "females"), ("boyfriend", "girlfriend"), ("groom", "bride"), ("actor", "actress"),
    ("actors", "actresses"), ("waiter", "waitress"), ("monk", "nun"), ("monks", "nuns"),
    ("hero", "heroine"), ("emperor", "empress"), ("duke", "duchess"), ("businessman", "businesswoman"),
    ("chairman", "chairwoman"), ("spokesman", "spokeswoman"), ("policeman", "policewoman"),
    ("stepfather", "stepmother"), ("stepson", "stepdaughter"), ("widower", "widow"), ("fiance", "fiancee"),
    ("masculine", "feminine"), ("boyhood", "girlhood"), ("fatherhood", "motherhood"),
    ("brotherhood", "sisterhood"), ("schoolboy", "schoolgirl"),
)  # fmt: skip
SWAP = {**dict(PAIRS), **{f: m for m, f in PAIRS}, "him": "her", "hers": "his"}
PHRASE_STARTS = frozenset(
    """a an the to and or but nor so yet in on at for with from by of off out up down over under into onto
    upon about after before as than that this these those there then when while if because again away back
    too very not is was be been i you he she it we they me him her us them my your our their""".split()
)
WORD = re.compile(r"[^\W\d_]+")


def _cased(word: str, like: str) -> str:
    """``word`` in the case of ``like``: UPPER, Title or lower."""
    if len(like) > 1 and like.isupper():
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def swap_word(word: str, next_word: str | None) -> str:
    """The counterpart of ``word`` (itself when it has none); ``next_word`` is the word that follows it
    directly (None: punctuation or the end), which decides "her" and "his"."""
    low = word.lower()
    if low in ("her", "his"):
        before_noun = next_word is not None and next_word.lower() not in PHRASE_STARTS
        swapped = ("his" if before_noun else "him") if low == "her" else ("her" if before_noun else "hers")
    elif low in SWAP:
        swapped = SWAP[low]
    else:
        return word
    return _cased(swapped, word)


def swap_tokens(tokens: list[str]) -> list[str]:
    """Each token swapped (tagging data: one token for one, so tags stay aligned)."""
    out = []
    for i, token in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        out.append(swap_word(token, after if after and WORD.fullmatch(after) else None))
    return out


def swap_text(text: str) -> str:
    """``text`` with its gendered words swapped; everything else (spaces, punctuation) as it was."""
    matches = list(WORD.finditer(text))
    parts, last = [], 0
    for i, m in enumerate(matches):
        after = matches[i + 1] if i + 1 < len(matches) else None
        joined = after is not None and text[m.end() : after.start()].isspace()
        parts += [text[last : m.start()], swap_word(m.group(), after.group() if joined else None)]
        last = m.end()
    return "".join(parts) + text[last:]


TEXT_FIELDS = ("text", "text_pair", "target", "passage")  # the fields a record's words are in


def swapped(record: dict, kind: str) -> dict:
    """A copy of ``record`` (of a dataset ``kind``: tasks/base.py's record schemas) with its words
    swapped."""
    if kind == "qa":
        raise WarmstartError(
            "data.counterfactual cannot swap the words of extractive QA data: its answers are character "
            "offsets into the context, which a swap moves",
            "drop data.counterfactual=true for this dataset",
        )
    copy = dict(record)
    if kind == "tagging":
        copy["tokens"] = swap_tokens(list(record["tokens"]))
        copy["text"] = " ".join(copy["tokens"])
        return copy
    for key in TEXT_FIELDS:
        if isinstance(copy.get(key), str):
            copy[key] = swap_text(copy[key])
    if isinstance(copy.get("choices"), list):
        copy["choices"] = [swap_text(c) if isinstance(c, str) else c for c in copy["choices"]]
    return copy


def augmented(records: list[dict], kind: str) -> list[dict]:
    """Each record followed by its swapped copy: twice as many records (also those with no gendered word,
    as in Lu et al.: every text is intervened on)."""
    return [r for record in records for r in (record, swapped(record, kind))]


def augmented_texts(texts):
    """Each text followed by its swapped copy (streaming: pretraining corpora)."""
    for text in texts:
        yield text
        yield swap_text(text)
