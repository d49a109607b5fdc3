"""How much a DP-ST release depends on its data: the overlap of the triples of two releases.

DP-ST releases public triples only. Two releases made from different data sets
(or from two disjoint samples of one data set) can be compared by which public
triples they contain: if most triples of a release of data set A also appear in
a release of an unrelated data set B, the release says little about A. This is
post-processing of two releases; it reads no private text.

:func:`triple_overlap` gives, for releases ``a`` and ``b`` (each a sequence of
released documents: :class:`~dpkit.dpst.privatize.PrivateDocument` or sequences of
triple strings):

* ``a_in_b``: the share of ``a``'s released triples (counted with repetition) whose
  text occurs anywhere in ``b``; ``b_in_a`` the other way round;
* ``jaccard``: distinct triple texts in both over distinct triple texts in either.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from dpkit.validate import ParameterError


@dataclass(frozen=True)
class TripleOverlap:
    """Overlap of two releases' triples (see the module docstring); shares in [0, 1]."""

    a_in_b: float
    b_in_a: float
    jaccard: float
    triples_a: int
    triples_b: int
    distinct_a: int
    distinct_b: int

    def to_dict(self) -> dict:
        return asdict(self)


def _triples(name: str, release) -> list[str]:
    if isinstance(release, (str, bytes)) or not isinstance(release, Sequence) or len(release) == 0:
        raise ParameterError(name, type(release).__name__,
                             "must be a non-empty sequence of released documents (PrivateDocument or triple lists)")
    out: list[str] = []
    for i, doc in enumerate(release):
        triples = getattr(doc, "triples", doc)
        if isinstance(triples, (str, bytes)) or not isinstance(triples, Sequence):
            raise ParameterError(f"{name}[{i}]", type(doc).__name__,
                                 "must be a PrivateDocument or a sequence of triple strings")
        out.extend(str(t) for t in triples)
    if not out:
        raise ParameterError(name, "<no triples>", "must contain at least one released triple")
    return out


def triple_overlap(a, b) -> TripleOverlap:
    """The overlap of releases ``a`` and ``b`` (see the module docstring)."""
    ta, tb = _triples("a", a), _triples("b", b)
    sa, sb = set(ta), set(tb)
    return TripleOverlap(a_in_b=sum(t in sb for t in ta) / len(ta), b_in_a=sum(t in sa for t in tb) / len(tb),
                         jaccard=len(sa & sb) / len(sa | sb), triples_a=len(ta), triples_b=len(tb),
                         distinct_a=len(sa), distinct_b=len(sb))


def data_free_overlap(corpus, n_triples: int, pool: int | None = None) -> float:
    """Expected ``a_in_b`` of two releases in the limit epsilon -> 0 of the document variant
    (``pool=None``) or of the topic variant (``pool``: its public pool per neighbourhood).

    There each slot's neighbourhood is uniform over the ``k`` centroids and its triple uniform
    inside the neighbourhood, whatever the data: triple ``t`` of neighbourhood ``C`` is drawn
    with probability ``p(t) = 1 / (k |C|)``. A triple drawn for release ``a`` occurs among the
    ``n_triples`` independent draws of release ``b`` with probability ``1 - (1 - p(t))^n``, so
    the expected share is ``sum_t p(t) (1 - (1 - p(t))^n)``. A function of the public corpus
    only: the part of an overlap that the mechanism makes at small epsilon, for any two data sets.

    The topic variant at epsilon -> 0 draws its neighbourhood uniformly and its triples from the
    ``pool`` members nearest the centroid: ``|C|`` becomes ``min(pool, |C|)``. Its triples of one
    document are drawn without replacement; counting every released triple as an independent draw
    makes this an approximation there (exact for one triple per document).
    """
    sizes = np.array([len(corpus.members(c)) for c in range(corpus.k)], dtype=np.float64)
    if pool is not None:
        if int(pool) < 1:
            raise ParameterError("pool", pool, "must be a positive number of triples, or None")
        sizes = np.minimum(sizes, int(pool))
    p = 1.0 / (corpus.k * sizes)                         # per triple of each neighbourhood
    n = int(n_triples)
    if n < 1:
        raise ParameterError("n_triples", n_triples, "must be a positive number of released triples")
    return float(np.sum(sizes * p * (1.0 - (1.0 - p) ** n)))


def positional_agreement(a, b) -> float:
    """Share of slots holding the same triple in ``a`` and ``b`` (document ``i``, slot ``j`` of each; the
    releases must have the same shape). Two releases drawn with the SAME seed from different data agree
    at many positions when the exponential mechanism is close to uniform: the same random numbers then
    pick the same candidates, whatever the data."""
    if len(a) != len(b):
        raise ParameterError("b", f"<{len(b)} documents>", f"must have as many documents as a ({len(a)})")
    pairs = [(x, y) for da, db in zip(a, b)
             for x, y in zip(_triples("a", [da]), _triples("b", [db]), strict=True)]
    return sum(x == y for x, y in pairs) / len(pairs)
