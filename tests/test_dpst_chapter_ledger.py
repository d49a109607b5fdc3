"""A chapter's DP-ST releases on the same documents add up, per relation."""

import math

import pytest

from dpkit.experiments.chapter_ledger import ChapterLedger
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.privatize import DPST
from dpkit.validate import ParameterError

CORPUS, EMBEDDER = toy_corpus(k=4)


def test_totals_per_relation():
    chapter = ChapterLedger()
    chapter.charge(DPST(CORPUS, 2.0, "document", embedder=EMBEDDER), 30, "doc, eps 2")
    chapter.charge(DPST(CORPUS, 3.0, "document", embedder=EMBEDDER), 30, "doc, eps 3")
    assert chapter.totals() == {"document_variant_any_two_documents": pytest.approx(5.0),
                                "all_releases_narrow_relation": pytest.approx(5.0),
                                "all_releases_any_two_documents": pytest.approx(5.0)}
    chapter.charge(DPST(CORPUS, 4.0, "neighbourhood", embedder=EMBEDDER), 30, "neighbourhood, eps 4")
    totals = chapter.totals()
    assert totals["document_variant_any_two_documents"] == pytest.approx(5.0)
    assert totals["all_releases_narrow_relation"] == pytest.approx(9.0)
    assert math.isinf(totals["all_releases_any_two_documents"])
    assert "same neighbourhoods" in chapter.all_releases.unit
    with pytest.raises(ParameterError, match="mechanism"):
        chapter.charge("not a mechanism", 3, "x")


def test_a_topic_release_counts_for_any_two_documents():
    from dpkit.dpst.topic import TopicDPST

    chapter = ChapterLedger()
    chapter.charge(DPST(CORPUS, 2.0, "document", embedder=EMBEDDER), 30, "doc, eps 2")
    chapter.charge(TopicDPST(CORPUS, 1.5, embedder=EMBEDDER), 30, "topic, eps 1.5")
    assert chapter.totals() == {"document_variant_any_two_documents": pytest.approx(3.5),
                                "all_releases_narrow_relation": pytest.approx(3.5),
                                "all_releases_any_two_documents": pytest.approx(3.5)}
