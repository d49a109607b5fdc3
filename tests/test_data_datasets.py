"""Real loads of every data set: sizes, classes, determinism, disjoint splits, bad arguments."""

import numpy as np
import pytest

from dpkit.data import (LOADERS, PRIVATE, PUBLIC, Dataset, load_dataset, load_health_tweets,
                        load_medical_specialties, load_news_articles, load_rotten_tomatoes,
                        medical_specialty_counts, health_tweet_outlet_counts)
from dpkit.validate import ParameterError


def _check_well_formed(ds: Dataset) -> None:
    assert len(ds.train_texts) == len(ds.train_labels) > 0
    assert len(ds.test_texts) == len(ds.test_labels) > 0
    assert set(ds.train_texts).isdisjoint(ds.test_texts)
    assert len(set(ds.train_texts)) == len(ds.train_texts)
    assert len(set(ds.test_texts)) == len(ds.test_texts)
    for text in ds.train_texts + ds.test_texts:
        assert isinstance(text, str) and text == text.strip() and text
        assert "  " not in text and "\n" not in text
    for labels in (ds.train_labels, ds.test_labels):
        assert labels.dtype == np.int64 and not labels.flags.writeable
        assert labels.min() >= 0 and labels.max() < len(ds.label_names)
    # every class is present in both parts
    assert all(c > 0 for c in ds.class_counts("train").values())
    assert all(c > 0 for c in ds.class_counts("test").values())


def test_medical_default_five_largest_specialties():
    ds = load_medical_specialties()
    _check_well_formed(ds)
    assert ds.name == "medical"
    assert ds.label_names == ("Dental", "Surgery", "Gynaecology and Obstetrics", "Medicine",
                              "Pathology")
    counts = ds.class_counts("all")
    assert counts == {k: v for k, v in list(medical_specialty_counts().items())[:5]}
    assert sum(counts.values()) == 5456
    assert abs(len(ds.test_texts) / sum(counts.values()) - 0.2) < 0.01


def test_medical_specialties_available_and_unknown_dropped():
    counts = medical_specialty_counts()
    assert len(counts) == 20 and "Unknown" not in counts
    assert sum(counts.values()) == 9648
    assert list(counts.values()) == sorted(counts.values(), reverse=True)


def test_medical_n_classes_and_options():
    ds = load_medical_specialties(n_classes=20, max_per_class=10)
    assert len(ds.label_names) == 20
    assert ds.class_counts("all")["Orthopaedics"] == 10
    with_options = load_medical_specialties(n_classes=2, max_per_class=5, with_options=True)
    assert all("A. " in t and "D. " in t for t in with_options.train_texts)


def test_rotten_tomatoes():
    ds = load_rotten_tomatoes()
    _check_well_formed(ds)
    assert ds.label_names == ("negative", "positive")
    assert ds.class_counts("all") == {"negative": 5384, "positive": 7368}


def test_health_tweets():
    ds = load_health_tweets()
    _check_well_formed(ds)
    assert len(ds.label_names) == 16
    assert sum(ds.class_counts("all").values()) == 60322
    assert ds.class_counts("all") == health_tweet_outlet_counts()
    assert not any("://" in t or "http" in t.lower() or "&amp;" in t
                   for t in ds.train_texts + ds.test_texts)
    assert all(len(t.split()) >= 3 for t in ds.train_texts)
    five = load_health_tweets(n_classes=5, max_per_class=100)
    assert five.label_names == tuple(list(health_tweet_outlet_counts())[:5])
    assert five.class_counts("all") == {k: 100 for k in five.label_names}
    with_urls = load_health_tweets(n_classes=2, max_per_class=200, strip_urls=False)
    assert any("http" in t for t in with_urls.train_texts)


def test_news_public_corpus():
    ds = load_news_articles()
    _check_well_formed(ds)
    assert ds.label_names == ("news",)
    assert len(ds.train_texts) + len(ds.test_texts) == 3773
    assert all(len(t.split()) >= 20 for t in ds.train_texts)
    short = load_news_articles(max_documents=50, max_chars=200)
    assert len(short.train_texts) + len(short.test_texts) == 50
    assert all(len(t) <= 200 for t in short.train_texts + short.test_texts)


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_same_seed_same_split_other_seed_other_split(name):
    a = load_dataset(name, seed=3, max_documents=200)
    b = load_dataset(name, seed=3, max_documents=200)
    c = load_dataset(name, seed=4, max_documents=200)
    assert a.train_texts == b.train_texts and a.test_texts == b.test_texts
    assert np.array_equal(a.train_labels, b.train_labels)
    assert set(a.train_texts) != set(c.train_texts)
    assert len(a.train_texts) + len(a.test_texts) == 200


@pytest.mark.parametrize("name", sorted(PRIVATE))
def test_caps_are_per_class_nested_and_stratified(name):
    small = load_dataset(name, max_per_class=20, seed=1)
    large = load_dataset(name, max_per_class=40, seed=1)
    assert all(v == 20 for v in small.class_counts("all").values())
    assert all(v == 4 for v in small.class_counts("test").values())
    assert set(small.train_texts + small.test_texts) < set(large.train_texts + large.test_texts)
    capped = load_dataset(name, max_documents=100, seed=1)
    assert len(capped.train_texts) + len(capped.test_texts) == 100


def test_test_fraction_is_respected_per_class():
    ds = load_medical_specialties(test_fraction=0.5, max_per_class=30)
    assert all(v == 15 for v in ds.class_counts("test").values())


def test_online_questions_join_two_topics_and_split_stratified():
    from dpkit.data.questions import load_online_questions, question_topic_counts

    counts = question_topic_counts()
    assert counts == {"finance": 646, "medication": 642}
    ds = load_online_questions(seed=0)
    assert ds.label_names == ("finance", "medication")
    assert len(ds.train_texts) + len(ds.test_texts) == sum(counts.values())
    assert all(len(t.split()) >= 3 for t in ds.train_texts)
    assert not set(ds.train_texts) & set(ds.test_texts)


def test_everyday_situations_join_two_kinds_and_cut_unfinished_sentences():
    from dpkit.data.situations import complete_sentences, load_everyday_situations, situation_kind_counts

    counts = situation_kind_counts()
    assert counts == {"activity": 2974, "social": 1930}
    ds = load_everyday_situations(seed=0, max_per_class=300)
    assert ds.label_names == ("activity", "social")
    assert all(t[-1] in '.!?"' for t in ds.train_texts + ds.test_texts)  # no label ends mid-sentence
    assert all(len(t.split()) >= 3 for t in ds.train_texts)
    assert not set(ds.train_texts) & set(ds.test_texts)
    assert complete_sentences("A man climbs. He then") == "A man climbs."
    assert complete_sentences("no end mark") == "no end mark"


def test_everyday_problems_join_two_kinds():
    from dpkit.data.problems import load_everyday_problems, problem_kind_counts

    assert problem_kind_counts() == {"arithmetic": 2255, "practical": 1290}
    ds = load_everyday_problems(seed=0, max_per_class=300)
    assert ds.label_names == ("arithmetic", "practical")
    assert all(len(t.split()) >= 3 for t in ds.train_texts + ds.test_texts)
    assert not set(ds.train_texts) & set(ds.test_texts)


def test_general_questions_join_two_kinds():
    from dpkit.data.general_questions import load_general_questions, question_kind_counts

    assert question_kind_counts() == {"encyclopedic": 3270, "everyday": 1221}
    ds = load_general_questions(seed=0, max_per_class=300)
    assert ds.label_names == ("encyclopedic", "everyday")
    assert all(len(t.split()) >= 3 for t in ds.train_texts + ds.test_texts)
    assert not set(ds.train_texts) & set(ds.test_texts)


def test_short_passages_join_news_summaries_and_policy_passages():
    from dpkit.data.passages import load_short_passages, passage_kind_counts

    assert passage_kind_counts() == {"policy": 1025, "news": 998}  # the policy passages repeat in the file
    ds = load_short_passages(seed=0, max_per_class=300)
    assert ds.label_names == ("policy", "news")
    assert all(len(t.split()) >= 3 for t in ds.train_texts + ds.test_texts)
    assert not set(ds.train_texts) & set(ds.test_texts)


def test_commons_speeches_keep_the_two_largest_parties_without_the_chair():
    from dpkit.data.commons import commons_party_counts, load_commons_speeches

    counts = commons_party_counts()
    assert list(counts)[:2] == ["Conservative", "Labour"] and "Speaker" not in counts
    ds = load_commons_speeches(seed=0)
    assert ds.label_names == ("Conservative", "Labour")
    assert sum(ds.class_counts("all").values()) == counts["Conservative"] + counts["Labour"]
    texts = ds.train_texts + ds.test_texts
    assert min(len(t.split()) for t in texts) >= 10
    assert sum("Â" in t or "â€" in t for t in texts) <= 2  # the double encoding is undone
    from dpkit.data.commons import repair_double_encoding
    assert repair_double_encoding("Â£35 billion") == "£35 billion"
    assert repair_double_encoding("the Government’s plan") == "the Government’s plan"


def test_registry_names():
    assert set(LOADERS) == {"medical", "rotten_tomatoes", "health_tweets", "news", "commons_speeches",
                            "online_questions", "everyday_situations", "everyday_problems",
                            "general_questions", "short_passages", "question_collections"}
    assert set(PRIVATE) | set(PUBLIC) == set(LOADERS) and not set(PRIVATE) & set(PUBLIC)
    ds = load_dataset("medical", n_classes=3, max_per_class=10)
    assert ds.name == "medical" and len(ds.label_names) == 3


@pytest.mark.parametrize("call, parameter", [
    (lambda: load_medical_specialties(n_classes=21), "n_classes"),
    (lambda: load_medical_specialties(n_classes=0), "n_classes"),
    (lambda: load_health_tweets(n_classes=17), "n_classes"),
    (lambda: load_rotten_tomatoes(test_fraction=0.0), "test_fraction"),
    (lambda: load_rotten_tomatoes(test_fraction=1.0), "test_fraction"),
    (lambda: load_medical_specialties(test_fraction=1.5), "test_fraction"),
    (lambda: load_medical_specialties(seed=-1), "seed"),
    (lambda: load_medical_specialties(seed=1.5), "seed"),
    (lambda: load_health_tweets(max_per_class=1), "max_per_class"),
    (lambda: load_rotten_tomatoes(max_documents=3, max_per_class=None), "max_documents"),
    (lambda: load_health_tweets(max_documents=31), "max_documents"),
    (lambda: load_medical_specialties(with_options="yes"), "with_options"),
    (lambda: load_health_tweets(strip_urls=None), "strip_urls"),
    (lambda: load_news_articles(max_chars=0), "max_chars"),
    (lambda: load_news_articles(min_words=-1), "min_words"),
    (lambda: load_health_tweets(min_words=-1), "min_words"),
    (lambda: load_dataset("imdb"), "name"),
    (lambda: load_rotten_tomatoes(n_classes=3), "n_classes"),
    (lambda: load_news_articles(n_classes=2), "n_classes"),
])
def test_bad_arguments_name_the_parameter(call, parameter):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == parameter
    assert parameter in str(info.value)


def test_loader_rejects_unknown_keyword():
    with pytest.raises(TypeError):
        load_dataset("rotten_tomatoes", strip_urls=True)


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_every_loader_takes_the_common_arguments(name):
    ds = load_dataset(name, n_classes=1, max_per_class=10, test_fraction=0.3, seed=5,
                      max_documents=10)
    assert len(ds.label_names) == 1
    assert len(ds.train_texts) == 7 and len(ds.test_texts) == 3


def test_rotten_tomatoes_n_classes():
    both = load_rotten_tomatoes(n_classes=2, max_per_class=5)
    assert both.label_names == ("negative", "positive")
    assert load_rotten_tomatoes(n_classes=1, max_per_class=5).label_names == ("positive",)


def test_question_collections_are_labelled_by_collection_name_only():
    from dpkit.data.question_collections import collection_counts

    assert collection_counts() == {"narrativeqa": 2972, "truthfulqa": 817}
    ds = load_dataset("question_collections", seed=0)
    assert ds.label_names == ("narrativeqa", "truthfulqa") and len(ds.test_texts) == 757
