"""The exponential mechanism of DP-ST, vectorized, and the neighbourhood choice.

Utility of a public candidate ``z`` for an input triple ``x`` (both embedded,
unit norm): ``u(x, z) = clip(cos(x, z), 0, 1)``. Clipping makes every utility
lie in [0, 1] for *any* pair of inputs, so the sensitivity is exactly 1 --
not only inside a cluster as argued in {cite}`meisenbacher2025dpst`
(Appendix A). The mechanism samples ``z`` with probability proportional to
``exp(epsilon u(x, z) / 2)`` over a *fixed* candidate set, through
:class:`dpkit.privacy.Exponential` (exact sampling on utilities rounded to a grid of
2^-30, which the contract of :class:`~dpkit.privacy.Exponential` adds to the sensitivity).

What the exponential mechanism guarantees here -- and what it does not:

* For a fixed candidate set C, any two inputs x, y give output distributions
  within a factor ``exp(epsilon)``: epsilon-DP (indeed epsilon-bounded range).
* In DP-ST the candidate set is the neighbourhood of x's *nearest centroid*,
  a function of the private input. Inputs in different neighbourhoods have
  disjoint output supports, so the privacy loss between them is infinite
  (:mod:`dpkit.dpst.guarantee` computes it). :func:`sample_neighbourhood`
  chooses the neighbourhood with a second exponential mechanism instead,
  which restores a guarantee for every pair of inputs.

Adapters for auditing (no copying needed):

* :func:`sample_in_neighbourhood` ``(candidate_embeddings, input_embedding,
  epsilon, rng, size)`` samples candidate indices; :func:`log_probabilities`
  gives the exact output distribution.
* :func:`nearest_neighbourhood` (non-private, the paper's choice) and
  :func:`sample_neighbourhood` (epsilon-DP) pick the neighbourhood.
* Broken variants for a "bug zoo" are switched on with the ``bug`` argument of
  :class:`dpkit.dpst.privatize.DPST`: ``"raw_text_fallback"`` (returns the raw
  text when no triple is found) and ``"private_neighbourhood"`` (the
  document-level variant with the neighbourhood chosen from the private text
  while still claiming the document-level contract).
"""

from __future__ import annotations

import numpy as np

from dpkit.privacy import Exponential, PrivacyContract
from dpkit.validate import ParameterError, check_positive, check_rng

SENSITIVITY = 1.0  # utilities are clipped to [0, 1]


def _rows(name: str, value, dim: int | None = None) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)  # utilities in float64: no float32 rounding before the noise
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[0] == 0:
        raise ParameterError(name, value, "must be a non-empty 2-d array of embeddings (rows)")
    if dim is not None and array.shape[1] != dim:
        raise ParameterError(name, value, f"must have {dim} columns like the candidates")
    if not np.all(np.isfinite(array)):
        raise ParameterError(name, value, "must contain only finite numbers")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ParameterError(name, value, "rows must be non-zero vectors")
    return array / norms


def clipped_cosine(candidate_embeddings, input_embedding) -> np.ndarray:
    """Utilities ``clip(cos, 0, 1)``: shape ``(n_candidates,)`` or ``(n_inputs, n_candidates)``."""
    candidates = _rows("candidate_embeddings", candidate_embeddings)
    single = np.asarray(input_embedding).ndim == 1
    inputs = _rows("input_embedding", input_embedding, candidates.shape[1])
    scores = np.clip(inputs @ candidates.T, 0.0, 1.0)
    return scores[0] if single else scores


def slot_split(epsilon: float, slots: int, neighbourhood_share: float) -> tuple[float, float]:
    """The document-level variant's budget per slot: (neighbourhood choice, triple choice).

    ``slots`` slots compose sequentially to ``epsilon``; each slot's ``epsilon / slots`` goes
    ``neighbourhood_share`` to the choice of a neighbourhood and the rest to the triple in it.
    The one statement of the split: the contract (:func:`dpkit.dpst.privatize.document_contract`),
    the sampler and the exact-loss check (:mod:`dpkit.dpst.guarantee`) read it.
    """
    per_slot = epsilon / slots
    return per_slot * neighbourhood_share, per_slot * (1.0 - neighbourhood_share)


def exponential(epsilon: float) -> Exponential:
    """The exponential mechanism with sensitivity 1 at ``epsilon`` (> 0)."""
    return Exponential(SENSITIVITY, check_positive("epsilon", epsilon), unit="triple",
                       neighbouring="replace-one")


def log_probabilities(candidate_embeddings, input_embedding, epsilon: float) -> np.ndarray:
    """Exact log P(output = candidate j | input) of the mechanism over the candidate set."""
    return exponential(epsilon).log_probabilities(clipped_cosine(candidate_embeddings, input_embedding))


def sample_in_neighbourhood(candidate_embeddings, input_embedding, epsilon: float,
                            rng: np.random.Generator, size=None) -> np.ndarray:
    """Indices into ``candidate_embeddings`` drawn by the exponential mechanism.

    ``input_embedding`` of shape ``(d,)`` gives shape ``size`` (a scalar array
    when ``size`` is None); ``(b, d)`` gives ``(*size, b)``. Epsilon-DP with
    respect to replacing the input by any other input, *for this candidate set*.
    """
    return draw(exponential(epsilon), candidate_embeddings, input_embedding, rng, size=size)


def draw(mech: Exponential, candidate_embeddings, input_embedding, rng: np.random.Generator,
         size=None) -> np.ndarray:
    """:func:`sample_in_neighbourhood` with a mechanism built once (:func:`exponential`) and reused
    across draws: the same distribution, without a new mechanism and contract per draw."""
    rng = check_rng("rng", rng)
    return mech.sample(clipped_cosine(candidate_embeddings, input_embedding), rng, size=size)


def nearest_neighbourhood(centroids, input_embedding) -> np.ndarray:
    """The paper's neighbourhood choice: the nearest centroid by cosine. NOT private."""
    centroids = _rows("centroids", centroids)
    inputs = _rows("input_embedding", input_embedding, centroids.shape[1])
    return np.argmax(inputs @ centroids.T, axis=1)


def sample_neighbourhood(centroids, input_embedding, epsilon: float, rng: np.random.Generator,
                         size=None) -> np.ndarray:
    """A neighbourhood drawn by the exponential mechanism over the centroids (epsilon-DP).

    Utility: clipped cosine to each centroid (sensitivity 1). The centroids are
    public (fitted on public triples), so the candidate set does not depend on the input.
    """
    return sample_in_neighbourhood(centroids, input_embedding, epsilon, rng, size=size)


def triple_contract(epsilon: float) -> PrivacyContract:
    """The paper's per-triple guarantee: replace-one triple *within one neighbourhood*."""
    return PrivacyContract(
        mechanism="DP-ST exponential mechanism (neighbourhood-aware)", neighbouring="replace-one",
        unit="triple, among triples whose nearest centroid is the same", measure="pure",
        sensitivity=SENSITIVITY, epsilon=check_positive("epsilon", epsilon), sensitivity_norm="max over candidates",
        kind="dpst_triple", parameters={"utility": "clip(cos, 0, 1)"},
        note="utility clip(cos,0,1); DP holds only between inputs in the same neighbourhood; "
             "across neighbourhoods the privacy loss is unbounded")

