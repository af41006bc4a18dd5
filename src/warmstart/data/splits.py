"""Deterministic, seeded train/validation/test assignment for data without official splits.

Each record is placed by a stable hash (blake2b) of the seed and its normalized text (plus text_pair), mapped
to a number u in [0, 1): u < test -> 'test', u >= 1 - validation -> 'validation', otherwise 'train'. So:
- duplicates of the same text always land in the same split (no test leakage through repeats);
- assignment is streaming (one record at a time, nothing held in memory) and splits never overlap;
- held-out regions nest across fractions: with the same seed, a corpus's test set (1%) lies inside a labeled
  dataset's test set (10%) built from the same texts, and likewise for validation.
"""

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from warmstart.errors import WarmstartError

SPLITS = ("train", "validation", "test")
# (validation, test) fractions per dataset kind.
DEFAULT_FRACTIONS = {
    "corpus": (0.02, 0.01),
    "labeled": (0.1, 0.1),
    "tagging": (0.1, 0.1),
    "qa": (0.1, 0.1),
    "choice": (0.1, 0.1),
    "seq2seq": (0.1, 0.1),
}


def normalize(text: str) -> str:
    """Whitespace-collapsed, case-folded text: the form that decides where a record goes."""
    return " ".join(text.split()).casefold()


def record_key(record: dict) -> str:
    """The hash key of a record: its normalized text, plus its normalized text_pair if it has one.

    Derived records (sentences of a document, questions about a passage) carry a ``split_key``, the text
    of their source document, so every record of one document lands in the split of that document.
    """
    if record.get("split_key") is not None:
        return normalize(record["split_key"])
    key = normalize(record["text"])
    if record.get("text_pair") is not None:
        key += "\x1f" + normalize(record["text_pair"])
    return key


def hash_unit(key: str, seed: int) -> float:
    """A stable number in [0, 1) for (seed, key); identical across runs, machines and Python versions."""
    digest = hashlib.blake2b(f"{seed}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def check_fractions(validation: float, test: float) -> None:
    if not (0 <= validation < 1 and 0 <= test < 1 and validation + test < 1):
        raise WarmstartError(
            f"bad split fractions: validation={validation}, test={test}",
            "use fractions in [0, 1) whose sum is below 1 (e.g. validation 0.1, test 0.1)",
        )


def resolve_fractions(kind: str, validation: float | None, test: float | None) -> tuple[float, float]:
    """(validation, test) with None replaced by the default of the dataset kind ('corpus' or 'labeled')."""
    default_validation, default_test = DEFAULT_FRACTIONS[kind]
    validation = default_validation if validation is None else validation
    test = default_test if test is None else test
    check_fractions(validation, test)
    return validation, test


def assign_split(key: str, seed: int, validation: float, test: float) -> str:
    """'train', 'validation' or 'test' for a key (see the module docstring for the rule)."""
    u = hash_unit(key, seed)
    if u < test:
        return "test"
    if u >= 1 - validation:
        return "validation"
    return "train"


def record_split(record: dict, seed: int, validation: float, test: float) -> str:
    return assign_split(record_key(record), seed, validation, test)


def filter_split(
    records: Iterable[dict], split: str, seed: int, validation: float, test: float
) -> Iterator[dict]:
    """The records of one split ('all' passes everything through), streaming."""
    if split == "all":
        yield from records
        return
    yield from (record for _, record in route(records, seed, validation, test, (split,)))


def route(
    records: Iterable[dict], seed: int, validation: float, test: float, wanted
) -> Iterator[tuple[str, dict]]:
    """(split, record) of the records whose split is ``wanted``, each hashed once (``filter_split`` for
    several splits at a time)."""
    for record in records:
        split = record_split(record, seed, validation, test)
        if split in wanted:
            yield split, record


def describe(seed: int, validation: float, test: float) -> str:
    """The split rule in words, for a dataset's split_note."""
    parts = [f"{name} {fraction * 100:g}%" for name, fraction in (("validation", validation), ("test", test))]
    shown = ", ".join(p for p, f in zip(parts, (validation, test)) if f)
    return (
        f"hashed split: blake2b of (seed {seed}, normalized text) -> {shown}, train the rest; "
        "duplicate texts always share a split"
    )


@dataclass(frozen=True)
class Carving:
    """Three splits made from parts given by split name (official splits of a hub dataset, the user's own
    split files): a 'validation' or 'test' part is taken as it is; a split with no part is carved from the
    'train' part by hash, with its own fraction only, so the rest of the train part stays train. With no
    'train' part, the rows of every part are pooled and all three splits carved from them."""

    kept: tuple[str, ...]  # splits taken as given
    carved: tuple[str, ...]  # splits carved by hash
    validation: float  # the fractions carved (0 for a kept split)
    test: float
    seed: int

    def read(self, parts: dict[str, Callable[[], Iterable[dict]]], split: str) -> Iterator[dict]:
        """The records of ``split``, from ``parts`` (split name -> a function that reads that part)."""
        if split in self.kept and split != "train":
            yield from parts[split]()
            return
        pools = [parts["train"]] if "train" in parts else list(parts.values())
        for pool in pools:
            yield from filter_split(pool(), split, self.seed, self.validation, self.test)

    def routed(self, parts: dict[str, Callable[[], Iterable[dict]]], wanted) -> Iterator[tuple[str, dict]]:
        """(split, record) of the ``wanted`` splits in one read of each part: the parts taken as given, then
        the pool, each of its records hashed once (each split in the order ``read`` gives it)."""
        for split in (s for s in self.kept if s != "train" and s in wanted):
            yield from ((split, r) for r in parts[split]())
        if not any(s == "train" or s in self.carved for s in wanted):
            return
        pools = [parts["train"]] if "train" in parts else list(parts.values())
        for pool in pools:
            yield from route(pool(), self.seed, self.validation, self.test, wanted)


def carving(names: Iterable[str], seed: int, validation: float, test: float) -> Carving:
    """How the parts called ``names`` become train/validation/test (see ``Carving``); ``validation`` and
    ``test`` are the fractions a split gets when it has to be carved."""
    names = set(names)
    if "train" not in names:
        return Carving((), SPLITS, validation, test, seed)
    carved = tuple(s for s in SPLITS if s not in names)
    kept = tuple(s for s in SPLITS if s in names)
    return Carving(
        kept,
        carved,
        validation if "validation" in carved else 0.0,
        test if "test" in carved else 0.0,
        seed,
    )
