"""A disclosure test without canaries: train/holdout split, rare features found in the release.

The input's own records play the canaries. A public coin sends each record to
``train`` (probability 1/2) or to ``holdout``; the generator runs on ``train``
only. A record's *rare features* are its word trigrams and its rare words
(wordfreq Zipf frequency below ``RARE_ZIPF``, a public reference) that occur in
no other record of the input. A record *matches* when one of its rare features
appears in the release.

Under add/remove epsilon-DP, whether a matching record is in ``train`` is a
guess that is right with probability at most ``e^eps / (1 + e^eps)``: the
guess "train" on every matching record (abstain on the rest) is exactly the
one-run design of Steinke, Nasr and Jagielski 2023 with the split as the coin
flips, so the bound of :mod:`dpkit.audit.release.one_run` applies with ``m`` = number of
records, ``v`` = train matches and ``r`` the number of guesses it may count. No
correction is needed: one test, fixed in advance.

Which ``r``: the theorem is stated for at most ``r`` guesses with ``r`` fixed
before the release is seen, while the number of matches is random. At
``claimed_delta = 0`` the realized number of matches is still valid (given the
release, each guessed coin is right with probability at most ``e^eps/(1+e^eps)``,
so the correct count is dominated by a binomial over the guesses made). For
``claimed_delta > 0`` no such argument is known, so the test counts ``r = m``:
every record could have been guessed, a bound fixed in advance (valid, and
much weaker: it rarely refutes anything).

Only counts leave this module (never a text, feature or label).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np
from wordfreq import zipf_frequency

from dpkit.audit.release.audit import release_texts
from dpkit.audit.release.one_run import epsilon_lower_bound
from dpkit.audit.release.scorers import words_of
from dpkit.methods import Records
from dpkit.validate import ParameterError, check_in_range, check_positive

RARE_ZIPF = 3.0


@dataclass
class DisclosureResult:
    claimed_epsilon: float
    claimed_delta: float
    confidence: float
    epsilon_lower_bound: float
    verdict: str
    records: int
    train_records: int
    holdout_records: int
    records_with_rare_features: int
    train_matches: int
    holdout_matches: int
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def _features(text: str) -> set:
    words = words_of(text)
    grams = {tuple(words[i:i + 3]) for i in range(len(words) - 2)}
    return grams | {(w,) for w in words if len(w) > 3 and zipf_frequency(w, "en") < RARE_ZIPF}


def rare_features(texts) -> list[set]:
    """Per text, its trigrams and rare words that no other text of ``texts`` has."""
    feats = [_features(t) for t in texts]
    counts = Counter(f for fs in feats for f in fs)
    return [{f for f in fs if counts[f] == 1} for fs in feats]


def _release_features(texts) -> set:
    out = set()
    for t in texts:
        words = words_of(t)
        out |= {tuple(words[i:i + 3]) for i in range(len(words) - 2)} | {(w,) for w in words}
    return out


def disclosure_test(synthesize, records, *, claimed_epsilon: float, claimed_delta: float = 0.0,
                    confidence: float = 0.95, seed=None) -> DisclosureResult:
    """Split ``records`` at random, synthesize from the train half, compare rare-feature matches of both halves."""
    if not isinstance(records, Records):
        raise ParameterError("records", records, "must be a dpkit.methods.Records")
    check_positive("claimed_epsilon", claimed_epsilon)
    check_in_range("claimed_delta", claimed_delta, 0.0, 1.0, high_open=True)
    check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    if len(records) < 2:
        raise ParameterError("records", f"<{len(records)} records>", "must hold at least two records")
    in_train = np.random.default_rng(seed).random(len(records)) < 0.5
    if not in_train.any():
        in_train[0] = True
    keep = np.flatnonzero(in_train)
    train = Records(tuple(records.texts[i] for i in keep),
                    None if not records.labelled else tuple(records.labels[i] for i in keep),
                    records.label_set, records.label_set_declared)
    start = time.perf_counter()
    present = _release_features(release_texts(synthesize(train)))
    features = rare_features(records.texts)
    matched = np.array([bool(fs & present) for fs in features])
    r, v = int(matched.sum()), int((matched & in_train).sum())
    guesses = r if claimed_delta == 0 else len(records)  # see the module docstring: realized r only at delta 0
    bound = epsilon_lower_bound(len(records), guesses, v, 1.0 - confidence, claimed_delta)
    return DisclosureResult(float(claimed_epsilon), float(claimed_delta), float(confidence), bound,
                            "refuted" if bound > claimed_epsilon else "not refuted", len(records),
                            int(in_train.sum()), int((~in_train).sum()), int(sum(bool(f) for f in features)),
                            v, r - v, round(time.perf_counter() - start, 3))
