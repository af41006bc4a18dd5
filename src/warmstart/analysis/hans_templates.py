"""HANS-style premise/hypothesis pairs from templates (McCoy et al. 2019, "Right for the wrong reasons"):
three heuristics a pair classifier may lean on, each with pairs it gets right by the heuristic (entailed)
and pairs where the heuristic fails (not entailed).

- lexical_overlap: every word of the hypothesis is in the premise;
- subsequence: the hypothesis is a contiguous run of the premise's words;
- constituent: the hypothesis is a whole clause of the premise.
"""

from __future__ import annotations

import random

NOUNS = ("doctor", "lawyer", "actor", "artist", "manager", "student", "author", "banker", "judge", "senator",
         "secretary", "athlete", "president", "professor", "tourist", "scientist")  # fmt: skip
# past tense = past participle: the passive reuses the word
TRANSITIVE = ("paid", "helped", "called", "thanked", "advised", "mentioned", "supported", "recommended",
              "contacted", "visited")  # fmt: skip
INTRANSITIVE = ("danced", "slept", "waited", "laughed", "arrived", "left", "shouted", "resigned", "smiled")
KNOW = ("knew", "forgot", "believed", "heard", "remembered")
ADVERBS = ("Clearly", "Certainly", "Obviously", "Of course")


def _words(rng: random.Random) -> dict:
    a, b, c = rng.sample(NOUNS, 3)
    vt, (vi, vi2) = rng.choice(TRANSITIVE), rng.sample(INTRANSITIVE, 2)
    return {"a": a, "b": b, "c": c, "vt": vt, "vi": vi, "vi2": vi2, "know": rng.choice(KNOW),
            "adv": rng.choice(ADVERBS)}  # fmt: skip


# heuristic -> [(entailed, premise template, hypothesis template)]
TEMPLATES = {
    "lexical_overlap": [
        (False, "The {a} {vt} the {b}.", "The {b} {vt} the {a}."),
        (False, "The {a} was {vt} by the {b}.", "The {a} {vt} the {b}."),
        (True, "The {a} was {vt} by the {b}.", "The {b} {vt} the {a}."),
        (True, "The {a} who the {b} {vt} {vi}.", "The {b} {vt} the {a}."),
    ],
    "subsequence": [
        (False, "The {a} near the {b} {vi}.", "The {b} {vi}."),
        (False, "The {a} {know} the {b} {vi}.", "The {a} {know} the {b}."),
        (True, "The {a} and the {b} {vt} the {c}.", "The {b} {vt} the {c}."),
        (True, "The {a} {vt} the {b} and the {c}.", "The {a} {vt} the {b}."),
    ],
    "constituent": [
        (False, "If the {a} {vi}, the {b} {vi2}.", "The {a} {vi}."),
        (False, "Unless the {a} {vi}, the {b} {vi2}.", "The {a} {vi}."),
        (True, "Since the {a} {vi}, the {b} {vi2}.", "The {a} {vi}."),
        (True, "{adv} the {a} {vi}.", "The {a} {vi}."),
    ],
}


def hans_examples(per_template: int = 50, seed: int = 0) -> list[dict]:
    """{"heuristic", "entailed", "template", "text", "text_pair"} for ``per_template`` fillings of each
    template, the same for the same seed."""
    rng = random.Random(seed)
    out = []
    for heuristic, templates in TEMPLATES.items():
        for number, (entailed, premise, hypothesis) in enumerate(templates):
            for _ in range(per_template):
                w = _words(rng)
                out.append({"heuristic": heuristic, "entailed": entailed, "template": number,
                            "text": premise.format(**w), "text_pair": hypothesis.format(**w)})  # fmt: skip
    return out
