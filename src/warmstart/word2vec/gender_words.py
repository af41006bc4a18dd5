"""The word lists of hard debiasing (Bolukbasi, Chang, Zou, Saligrama and Kalai 2016, "Man is to Computer
Programmer as Woman is to Homemaker? Debiasing Word Embeddings", NeurIPS), written out short.

- ``DEFINITIONAL``: the paper's ten definitional pairs (female, male), whose differences span the gender
  direction (Section 5; the authors' code ships nine of them in data/definitional_pairs.json, without
  gal/guy).
- ``EQUALITY``: pairs that should differ only in gender, after the authors' data/equalize_pairs.json (its
  single-word pairs: phrases such as "twin_brother" are not in warmstart's vocabularies; wife/husband and
  nun/monk added).
- ``GENDER_SPECIFIC``: words whose gender is part of their meaning, left as they are, a subset of the
  authors' 218-word seed list data/gender_specific_seed.json (the paper neutralises every other word; its
  1,441-word list was grown from the seed by a classifier over GoogleNews vectors, not shipped here).
- ``OCCUPATIONS``: gender-neutral occupations for DirectBias, from the paper's profession list
  (Figure 1's extremes and common ones).
"""

from __future__ import annotations

DEFINITIONAL = (
    ("she", "he"), ("her", "his"), ("woman", "man"), ("mary", "john"), ("herself", "himself"),
    ("daughter", "son"), ("mother", "father"), ("gal", "guy"), ("girl", "boy"), ("female", "male"),
)  # fmt: skip

EQUALITY = (
    ("woman", "man"), ("women", "men"), ("she", "he"), ("her", "his"), ("herself", "himself"),
    ("girl", "boy"), ("girls", "boys"), ("sister", "brother"), ("sisters", "brothers"),
    ("daughter", "son"), ("daughters", "sons"), ("mother", "father"), ("mothers", "fathers"),
    ("mom", "dad"), ("moms", "dads"), ("grandma", "grandpa"), ("grandmother", "grandfather"),
    ("granddaughter", "grandson"), ("granddaughters", "grandsons"), ("aunt", "uncle"), ("niece", "nephew"),
    ("wife", "husband"), ("wives", "husbands"), ("queen", "king"), ("queens", "kings"),
    ("princess", "prince"), ("lady", "gentleman"), ("ladies", "gentlemen"), ("female", "male"),
    ("females", "males"), ("schoolgirl", "schoolboy"), ("motherhood", "fatherhood"),
    ("sorority", "fraternity"), ("businesswoman", "businessman"), ("chairwoman", "chairman"),
    ("spokeswoman", "spokesman"), ("congresswoman", "congressman"), ("councilwoman", "councilman"),
    ("convent", "monastery"), ("nun", "monk"), ("mare", "gelding"), ("filly", "colt"),
    ("estrogen", "testosterone"),
)  # fmt: skip

GENDER_SPECIFIC = frozenset(
    """
    actress actresses aunt aunts bachelor ballerina beard boy boyfriend boyfriends boyhood boys bride brides
    brother brotherhood brothers businessman businessmen businesswoman chairman chairwoman colt congressman
    congresswoman convent councilman councilwoman countryman countrymen dad daddy dads daughter daughters
    diva estrogen father fathered fatherhood fathers fella female females feminism fiance fiancee filly
    fraternal fraternity gal gals gelding gentleman gentlemen girl girlfriend girlfriends girls goddess
    godfather granddaughter granddaughters grandfather grandma grandmother grandmothers grandpa grandson
    grandsons guy he heiress her heroine hers herself him himself his hostess housewife husband husbands
    king kings lad ladies lads lady ma maid maiden male males mama man mare maternal maternity men mistress
    mom mommy moms monastery monk monks mother motherhood mothers nephew nephews niece nieces nun nuns pa
    paternity prince princes princess queen queens salesman schoolboy schoolgirl she sir sister sisters son
    sons sorority spokesman spokeswoman statesman stepdaughter stepfather stepmother stepson testosterone
    uncle uncles waitress widow widower wife wives woman women
    """.split()
)

OCCUPATIONS = (
    "homemaker", "nurse", "receptionist", "librarian", "socialite", "hairdresser", "nanny", "bookkeeper",
    "stylist", "housekeeper", "maestro", "skipper", "protege", "philosopher", "captain", "architect",
    "financier", "warrior", "broadcaster", "magician", "doctor", "engineer", "programmer", "scientist",
    "lawyer", "teacher", "professor", "surgeon", "secretary", "dancer", "singer", "writer", "farmer",
    "soldier", "pilot", "mechanic", "carpenter", "manager", "banker", "chef", "student", "president",
)  # fmt: skip
