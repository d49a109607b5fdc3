"""Private prediction charges its ledger entry before it reads the records it pays for.

The readers are wrapped: the hash partition (``assign_batches``, which hashes every
record) and the rendering of each private prompt (``cap_record``).  Each notes how
many entries the ledger held when it was first called.
"""

import pytest

import dpkit.privpred.pipeline as pipeline
from dpkit.privacy import PrivacyLedger
from dpkit.privpred import PrivatePredictionConfig, generate_synthetic, get_template
from dpkit.validate import ParameterError

CFG = dict(epsilon=10.0, delta=1e-5, expected_batch_size=4, clip=1.0, temperature=1.0, top_k=20, max_new_tokens=2,
           max_examples_per_batch=1)


@pytest.fixture(scope="module")
def lm():
    from dpkit.models import load_lm

    return load_lm()


def test_the_partition_and_the_prompts_read_the_records_after_the_charge(monkeypatch, lm):
    ledger, seen = PrivacyLedger(), {}
    for name in ("assign_batches", "cap_record"):
        real = getattr(pipeline, name)

        def wrapped(*args, _real=real, _name=name, **kwargs):
            seen.setdefault(_name, len(ledger.entries))
            return _real(*args, **kwargs)

        monkeypatch.setattr(pipeline, name, wrapped)
    generate_synthetic(["Nice film.", "Dull and long."], get_template("sentiment"), PrivatePredictionConfig(**CFG),
                       labels=[1, 0], label_names=["negative", "positive"], n_batches=1, model=lm, seed=0,
                       ledger=ledger)
    assert seen == {"assign_batches": 1, "cap_record": 1}
    assert ledger.entries[0]["label"].startswith("private prediction")


def test_bad_labels_are_refused_before_the_charge(lm):
    ledger = PrivacyLedger()
    with pytest.raises(ParameterError, match="public label set") as err:
        generate_synthetic(["Nice film."], get_template("sentiment"), PrivatePredictionConfig(**CFG), labels=[5],
                           label_names=["negative", "positive"], n_batches=1, model=lm, seed=0, ledger=ledger)
    assert "5" not in str(err.value) and ledger.entries == []
