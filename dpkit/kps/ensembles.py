"""DP-KDE ensembles for iterative keyphrase sequences: linear and logarithmic.

A step ``i`` of the iterative sampler scores length-``i`` prefixes, i.e. vectors of
dimension ``d * i`` (``i`` concatenated unit-norm embeddings).

* **linear** {cite}`nagesh2024dpkps`: one DP-KDE per prefix length ``l = 1..L``,
  built on length-``l`` keyphrase windows, bandwidth ``sigma_l = sigma_0 sqrt(l)``
  (the concatenation has norm ``sqrt(l)``); each gets ``eps_kde / L``.
* **logarithmic** (the paper's Appendix B.2): members of ``D_j = min(2^j, L)``
  blocks for ``j = 1..ceil(log2 L)`` (one member of 1 block if ``L = 1``), each
  getting ``eps_kde / ceil(log2 L)``.  Step ``i`` queries the smallest member with
  ``D_j >= i`` after zero-padding the prefix to ``D_j`` blocks, so at most half the
  blocks are padding.  Bandwidth ``sigma_j = sigma_0 sqrt(D_j / 2)`` (the paper's
  ``u = 2 / D``).  By Theorem B.2 the padded query returns
  ``exp(-(D_j - i) / sigma_j^2)`` times the prefix KDE: a factor common to all
  candidates of a step, so sampling from normalized scores is unaffected;
  :meth:`KDEEnsemble.prefix_correction` undoes it when absolute values matter.

Privacy: the members of one ensemble read the same documents, so their
epsilons add (sequential composition): the ensemble is ``eps_kde``-DP under
add/remove of one document.  Each member bounds a document's influence with the
rule of :mod:`dpkit.kps.kde` applied to the document's windows ("mean": a
document's windows share total weight 1).  Documents with fewer keyphrases than a
member's length contribute nothing to that member, and zero documents give every
member the all-zero sketch plus its noise (the same mechanism on an empty set).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from dpkit.kps.kde import DPKDE, document_weights, dpkde_mechanism, privatize_sketch
from dpkit.kps.rff import FEATURE_BOUND, RandomFourierFeatures
from dpkit.validate import check_choice, check_int, check_positive, check_rng, check_unit_norm

ENSEMBLES = ("linear", "logarithmic")
WINDOWS = ("first", "all")


def member_lengths(L: int, ensemble: str) -> list[int]:
    """Block counts of the ensemble's members, shortest first."""
    L = check_int("L", L, minimum=1)
    check_choice("ensemble", ensemble, ENSEMBLES)
    if ensemble == "linear":
        return list(range(1, L + 1))
    if L == 1:
        return [1]
    return [min(2 ** j, L) for j in range(1, math.ceil(math.log2(L)) + 1)]


def member_bandwidth(n_blocks: int, ensemble: str, base_bandwidth: float = 1.0) -> float:
    """Kernel bandwidth of a member of ``n_blocks`` blocks (see the module docstring)."""
    n_blocks = check_int("n_blocks", n_blocks, minimum=1)
    check_choice("ensemble", ensemble, ENSEMBLES)
    base_bandwidth = check_positive("base_bandwidth", base_bandwidth)
    effective = n_blocks if ensemble == "linear" else max(1.0, n_blocks / 2.0)
    return base_bandwidth * math.sqrt(effective)


def sequence_windows(term_lists: Sequence[Sequence[int]], n_blocks: int, windows: str = "all"
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Length-``n_blocks`` windows of each document's keyphrase ids and their document ids."""
    n_blocks = check_int("n_blocks", n_blocks, minimum=1)
    check_choice("windows", windows, WINDOWS)
    rows, owners = [], []
    for doc, terms in enumerate(term_lists):
        terms = list(terms)
        last = len(terms) - n_blocks + 1
        for start in range(0, max(last, 0) if windows == "all" else min(last, 1)):
            rows.append(terms[start:start + n_blocks])
            owners.append(doc)
    return np.asarray(rows, dtype=int).reshape(-1, n_blocks), np.asarray(owners, dtype=int)


def block_projections(embeddings: np.ndarray, features: RandomFourierFeatures, block: int) -> np.ndarray:
    """``E @ W_block^T``: every term's projection when it sits in block ``block`` (0-based), ``(|V|, I)``."""
    d = embeddings.shape[1]
    return embeddings @ features.block(block * d, (block + 1) * d).T


def window_features(windows: np.ndarray, embeddings: np.ndarray, features: RandomFourierFeatures) -> np.ndarray:
    """Random features of concatenated windows via the block decomposition (never builds the concatenation)."""
    projection = np.zeros((len(windows), features.n_features))
    for block in range(windows.shape[1]):
        projection += block_projections(embeddings, features, block)[windows[:, block]]
    return FEATURE_BOUND * np.cos(projection + features.offsets)


@dataclass
class KDEMember:
    n_blocks: int
    kde: DPKDE


@dataclass
class KDEEnsemble:
    """The released members of one ensemble plus what is needed to query them."""

    ensemble: str
    L: int
    members: list[KDEMember]
    epsilon: float
    contracts: list = field(default_factory=list)

    def member_index(self, step: int) -> int:
        """Which member step ``step`` (1-based prefix length) queries: the smallest with enough blocks."""
        step = check_int("step", step, minimum=1, maximum=self.L)
        for index, member in enumerate(self.members):
            if member.n_blocks >= step:
                return index
        raise AssertionError("unreachable: the last member has L blocks")

    def prefix_correction(self, step: int) -> float:
        """``exp(u (D - step))``: multiplies a zero-padded score into the prefix KDE (Theorem B.2)."""
        member = self.members[self.member_index(step)]
        sigma = member.kde.features.bandwidth
        return math.exp((member.n_blocks - step) / sigma ** 2)


def _member_label(ensemble: str, n_blocks: int) -> str:
    return f"{ensemble} ensemble member, {n_blocks} blocks"


def ensemble_mechanisms(L: int, eps_kde: float, *, ensemble: str = "logarithmic", n_features: int = 1024,
                        unit: str = "document") -> list[tuple]:
    """The members' ``(mechanism, contract)``, in order, from public parameters only: the one statement of
    the split (``eps_kde`` evenly over the members). A caller charges the contracts before reading
    documents and hands the pairs to :func:`build_ensemble`, which draws with them."""
    eps_kde = check_positive("eps_kde", eps_kde)
    lengths = member_lengths(L, ensemble)
    return [dpkde_mechanism(n_features, eps_kde / len(lengths), unit=unit,
                            label=_member_label(ensemble, n_blocks)) for n_blocks in lengths]


def build_ensemble(term_lists: Sequence[Sequence[int]], embeddings, L: int, eps_kde: float,
                   rng: np.random.Generator, *, ensemble: str = "logarithmic", n_features: int = 1024,
                   base_bandwidth: float = 1.0, windows: str = "all", unit: str = "document",
                   built: Sequence[tuple] | None = None) -> KDEEnsemble:
    """Release an ``eps_kde``-DP ensemble from documents' keyphrase id lists (ids into ``embeddings``).

    ``built``: the members' charged ``(mechanism, contract)`` (:func:`ensemble_mechanisms`), drawn with
    as they are; None builds them here."""
    check_rng("rng", rng)
    embeddings = check_unit_norm("embeddings", embeddings)
    eps_kde = check_positive("eps_kde", eps_kde)
    n_features = check_int("n_features", n_features, minimum=1)
    lengths = member_lengths(L, ensemble)
    if built is None:
        built = ensemble_mechanisms(L, eps_kde, ensemble=ensemble, n_features=n_features, unit=unit)
    if isinstance(term_lists, np.ndarray):
        term_lists = term_lists.tolist()
    d = embeddings.shape[1]
    members, contracts = [], []
    for n_blocks, pair in zip(lengths, built, strict=True):
        features = RandomFourierFeatures(d * n_blocks, n_features,
                                         member_bandwidth(n_blocks, ensemble, base_bandwidth), rng)
        rows, owners = sequence_windows(term_lists, n_blocks, windows)
        exact = np.zeros(n_features)
        if len(rows):
            weights, _ = document_weights(owners, "mean")
            exact = weights @ window_features(rows, embeddings, features)
        kde = privatize_sketch(exact, features, pair[1].epsilon, rng, built=pair)
        members.append(KDEMember(n_blocks, kde))
        contracts.append(kde.contract)
    return KDEEnsemble(ensemble, int(L), members, eps_kde, contracts)
