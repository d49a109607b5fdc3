"""One ledger for a chapter that privatizes the same documents several times.

Every DP-ST release privatizes each document on its own (local DP), so one
release over many documents costs each document the release's epsilon
(parallel composition); two releases of the same documents add up (sequential
composition, pure DP: basic composition, delta = 0).

The variants guarantee different things (:mod:`dpkit.dpst.privatize`,
:mod:`dpkit.dpst.topic`): the document and topic variants cover *any* two documents, the neighbourhood variant
only documents with the same number of triples lying pairwise in the same
neighbourhoods (its loss is unbounded for all other pairs). So the totals are
kept for two relations:

* ``document_variant``: the document- and topic-variant releases only, valid for
  any two documents;
* ``all_releases``: every release, valid only under the neighbourhood variant's
  narrow relation (a document-variant contract holds for every pair, hence also
  for those: it is restated under the narrow unit, a weakening).

Over *any* two documents, a chapter with a neighbourhood-variant release has no
finite total.
"""

from __future__ import annotations

from dpkit.dpst import privatize, topic
from dpkit.privacy import PrivacyLedger
from dpkit.validate import ParameterError, check_int


class ChapterLedger:
    """The ledgers of all releases a chapter makes on one private data set (see the module docstring)."""

    def __init__(self) -> None:
        self.document_variant = PrivacyLedger()
        self.all_releases = PrivacyLedger()
        self.releases: list[dict] = []

    def charge(self, mechanism, n_documents: int, label: str) -> None:
        """Record one release: ``mechanism`` (a :class:`~dpkit.dpst.privatize.DPST` or a
        :class:`~dpkit.dpst.topic.TopicDPST`) applied to ``n_documents`` documents, each privatized alone."""
        if not isinstance(mechanism, (privatize.DPST, topic.TopicDPST)):
            raise ParameterError("mechanism", mechanism, "must be a dpkit.dpst.DPST or a dpkit.dpst.topic.TopicDPST")
        n_documents = check_int("n_documents", n_documents, minimum=1)
        contract = mechanism.contract
        if mechanism.variant in ("document", "topic"):
            self.document_variant.spend_parallel(contract, label, groups=n_documents)
            narrow = privatize.DPST(mechanism.corpus, mechanism.epsilon, "neighbourhood").contract.unit
            contract = contract.replace(unit=narrow)
        self.all_releases.spend_parallel(contract, label, groups=n_documents)
        self.releases.append({"label": label, "variant": mechanism.variant, "epsilon": mechanism.epsilon})

    def totals(self) -> dict[str, float]:
        """Per relation: the total pure epsilon (delta = 0) over the releases it covers."""
        any_pair = self.document_variant.pure_epsilon()
        if any(r["variant"] == "neighbourhood" for r in self.releases):
            any_pair_all = float("inf")
        else:
            any_pair_all = any_pair
        return {"document_variant_any_two_documents": any_pair,
                "all_releases_narrow_relation": self.all_releases.pure_epsilon(),
                "all_releases_any_two_documents": any_pair_all}
