"""Power and false positives of the release audit on the real methods (smoke sizes).

Each broken whole pipeline of :mod:`dpkit.audit.release.zoo` must be refuted at the
epsilon it claims with the default audit size (1000 canaries; 100 for private
prediction, whose local-model decoding is the cost); the correct methods at
epsilon 1 and 4 must never be: 0 of 20 audits across seeds. The model-backed runs are
slow on a shared CPU and carry ``@pytest.mark.slow``; the copying generator is caught
in the fast suite (tests/test_audit_release.py).
"""

import numpy as np
import pytest

from dpkit.audit.release import zoo
from dpkit.audit.release.audit import audit_release, neighbouring_for
from dpkit.methods import Records

FAST = ("ngram", "chars")
PP_AT_1 = {"expected_batch_size": 16.0}   # pp's smoke preset affords a private token from epsilon ~2.5 up


# pp decodes every prompt on the local model: its audits run on 12 background rows (the first 4 of each label of the
# sample) instead of 60, so ~62 prompts instead of ~110. The audit's statistics (100 canaries, each included with
# probability 1/2, 95% confidence, the guess plans fixed in advance) do not involve the background rows, and with
# fewer of them a canary is a larger share of its batch: a leak is no harder to see.
SAMPLES = {"kps": "data/own_data_sample.csv", "dpst": "data/own_data_sample.csv",
           "pp": "tests/data/own_data_small.csv"}


def _records(name):
    from dpkit.data.tables import label_set, read_table

    table = read_table(SAMPLES[name], "text", "label")
    return Records.from_strings(table.texts, table.labels, label_set(table.labels, None), declared=False)


def test_echo_backend_returns_the_prompt():
    assert zoo.EchoBackend().generate_batch(["hello there"]) == ["hello there"]


@pytest.mark.slow
@pytest.mark.parametrize("name,factory,m", [
    ("kps", lambda: zoo.kps_raw_vocabulary(1.0, seed=0), None),
    ("dpst", lambda: zoo.dpst_raw_fallback(1.0, seed=0), None),
    ("pp", lambda: zoo.pp_prompts_in_release(1.0, seed=0, **PP_AT_1), 100),
])
def test_broken_pipelines_are_refuted_at_their_claim(name, factory, m):
    result = audit_release(factory(), _records(name), canaries=m, claimed_epsilon=1.0,
                           claimed_delta=1e-6 if name == "pp" else 0.0, seed=3, scorers=FAST,
                           neighbouring=neighbouring_for(name))
    assert result.verdict == "refuted", result.to_dict()


# 20 audits: the model-backed private prediction (about a minute each here) once per epsilon
CORRECT = ([("kps", eps, s, {}) for eps in (1.0, 4.0) for s in range(6)]
           + [("dpst", eps, s, {"reconstruct": False}) for eps in (1.0, 4.0) for s in range(3)]
           + [("pp", 1.0, 0, PP_AT_1), ("pp", 4.0, 0, {})])


@pytest.mark.slow
@pytest.mark.parametrize("name,eps,seed,changes", CORRECT, ids=[f"{c[0]}-{c[1]:g}-{c[2]}" for c in CORRECT])
def test_correct_methods_are_never_refuted(name, eps, seed, changes):
    m = {"kps": 200, "dpst": 100, "pp": 100}[name]
    result = audit_release(zoo.method(name, eps, seed=seed, **changes), _records(name), canaries=m,
                           claimed_epsilon=eps, claimed_delta=1e-6 if name == "pp" else 0.0, seed=100 + seed,
                           scorers=FAST, neighbouring=neighbouring_for(name))
    assert result.verdict == "not refuted", result.to_dict()
