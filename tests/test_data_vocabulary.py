"""Real loads of the English (wordfreq) and medical (ICD-10-CM) vocabularies."""

import re

import pytest

from dpkit.data import english_vocabulary, medical_vocabulary
from dpkit.validate import ParameterError


def test_english_vocabulary():
    words = english_vocabulary(5000)
    assert len(words) == len(set(words)) == 5000
    assert all(re.fullmatch(r"[a-z]{2,}", w) for w in words)
    assert words[:3] == ["the", "to", "and"]
    assert english_vocabulary(100) == words[:100]          # stable prefix
    assert english_vocabulary(5000) == words               # deterministic


def test_english_vocabulary_options():
    content = english_vocabulary(2000, remove_stop_words=True, min_length=4)
    assert "the" not in content and "about" not in content
    assert all(len(w) >= 4 for w in content)
    assert "people" in content


@pytest.mark.parametrize("kwargs, parameter", [
    ({"n": 0}, "n"), ({"n": 10**7}, "n"), ({"n": 10, "min_length": 0}, "min_length"),
    ({"n": 10, "remove_stop_words": 1}, "remove_stop_words")])
def test_english_vocabulary_bad_arguments(kwargs, parameter):
    with pytest.raises(ParameterError) as info:
        english_vocabulary(**kwargs)
    assert info.value.name == parameter


def test_medical_vocabulary():
    phrases = medical_vocabulary()
    assert len(phrases) == len(set(phrases)) > 10_000
    assert all(p == p.lower().strip() and 1 <= len(p.split()) <= 3 for p in phrases)
    assert not any(re.search(r"[0-9,()]", p) for p in phrases)
    for term in ("malignant neoplasm", "pregnancy", "diabetes mellitus", "pneumonia"):
        assert term in phrases
    assert not {"unspecified", "other", "left", "initial encounter"} & set(phrases)
    assert medical_vocabulary(500) == phrases[:500]
    frequent = medical_vocabulary(min_count=2)
    assert set(frequent) < set(phrases)
    single = medical_vocabulary(max_words=1)
    assert all(" " not in p for p in single)


@pytest.mark.parametrize("kwargs, parameter", [
    ({"n": 0}, "n"), ({"n": 10**7}, "n"), ({"max_words": 0}, "max_words"),
    ({"min_count": 0}, "min_count")])
def test_medical_vocabulary_bad_arguments(kwargs, parameter):
    with pytest.raises(ParameterError) as info:
        medical_vocabulary(**kwargs)
    assert info.value.name == parameter
