"""Invariants of the seeded stratified split and of the Dataset record (synthetic records)."""

import pytest
from hypothesis import given, settings, strategies as st

from dpkit.data import Dataset, clean_text, split_dataset
from dpkit.data.dataset import clean_records
from dpkit.validate import ParameterError


def _records(sizes):
    texts, labels = [], []
    for k, n in enumerate(sizes):
        texts += [f"class {k} text {i}" for i in range(n)]
        labels += [k] * n
    return texts, labels


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(2, 40), min_size=1, max_size=5),
       fraction=st.floats(0.05, 0.95), seed=st.integers(0, 2**31),
       cap=st.one_of(st.none(), st.integers(2, 50)))
def test_split_invariants(sizes, fraction, seed, cap):
    texts, labels = _records(sizes)
    names = [f"c{k}" for k in range(len(sizes))]
    ds = split_dataset("x", texts, labels, names, test_fraction=fraction, seed=seed,
                       max_per_class=cap)
    again = split_dataset("x", texts, labels, names, test_fraction=fraction, seed=seed,
                          max_per_class=cap)
    assert ds.train_texts == again.train_texts and ds.test_texts == again.test_texts
    assert set(ds.train_texts).isdisjoint(ds.test_texts)
    for k, n in enumerate(sizes):
        kept = n if cap is None else min(n, cap)
        n_test = ds.class_counts("test")[f"c{k}"]
        assert ds.class_counts("all")[f"c{k}"] == kept
        assert n_test == min(max(round(fraction * kept), 1), kept - 1)
        # labels stay attached to their texts
        assert all(t.startswith(f"class {k} ") for t in ds.texts_of(k, "train"))
        assert all(t.startswith(f"class {k} ") for t in ds.texts_of(k, "test"))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(2, 60), min_size=1, max_size=4), seed=st.integers(0, 1000),
       data=st.data())
def test_max_documents_total_and_every_class_kept(sizes, seed, data):
    texts, labels = _records(sizes)
    total = data.draw(st.integers(2 * len(sizes), sum(sizes)))
    ds = split_dataset("x", texts, labels, [str(k) for k in range(len(sizes))],
                       test_fraction=0.3, seed=seed, max_documents=total)
    counts = ds.class_counts("all")
    assert sum(counts.values()) == total
    assert all(v >= 2 for v in counts.values())


def test_clean_text_and_records():
    assert clean_text("  a\n\tb   c ") == "a b c"
    records = [(" x ", 0), ("x", 1), ("", 0), ("\n", 1), ("y", 1)]
    assert clean_records(records) == [("x", 0), ("y", 1)]


def test_dataset_is_frozen_and_validated():
    ds = Dataset("d", ["a", "b"], [0, 1], ["c"], [1], ["neg", "pos"])
    assert isinstance(ds.train_texts, tuple)
    with pytest.raises(Exception):
        ds.name = "other"
    with pytest.raises(ValueError):
        ds.train_labels[0] = 1
    assert ds.class_counts() == {"neg": 1, "pos": 1}
    assert ds.texts_of("pos", "test") == ["c"]
    assert "neg" in ds.describe() and "train" in ds.describe()
    with pytest.raises(ParameterError):
        Dataset("d", ["a"], [2], [], [], ["neg", "pos"])
    with pytest.raises(ParameterError):
        Dataset("d", ["a", "b"], [0], [], [], ["neg"])
    with pytest.raises(ParameterError):
        ds.class_counts("validation")
    with pytest.raises(ParameterError):
        ds.texts_of("neutral")


def test_class_with_one_example_is_rejected():
    with pytest.raises(ParameterError):
        split_dataset("x", ["a", "b", "c"], [0, 0, 1], ["p", "q"], test_fraction=0.5, seed=0)
