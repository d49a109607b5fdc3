"""k-NN precision and recall of a synthetic set against a real set, in an embedding space.

As Kynkäänniemi et al. (2019) define them: each set's *manifold* is the union of
balls, one around each of its points, whose radius is the distance from the point to
its k-th nearest neighbour **within the same set** (the point itself not counted).

* precision: the share of synthetic points inside the real manifold (the synthetic
  texts look like some real text: fidelity);
* recall: the share of real points inside the synthetic manifold (the real texts are
  covered by the synthetic ones: diversity).

Both lie in [0, 1]. Identical sets give 1 and 1; far-apart sets give 0 and 0; a
synthetic set that repeats one typical text has high precision and low recall. Here
the space is the project's sentence embeddings (all-MiniLM-L6-v2, unit norm) with the
Euclidean distance, and ``k = 3`` (the paper's choice). A set with ``k`` points or
fewer uses ``k = size - 1`` (reported as ``knn_k``); a single point has radius 0.
"""

from __future__ import annotations

import numpy as np

from dpkit.validate import ParameterError, check_int

#: The neighbour rank of the radii (Kynkäänniemi et al. 2019 use k = 3).
DEFAULT_K = 3
_CHUNK = 2048  # rows of a distance block: memory stays O(chunk x n)


def _distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of ``a`` and ``b`` (clipped at 0 against rounding)."""
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.maximum(sq, 0.0))


def radii(points: np.ndarray, k: int) -> np.ndarray:
    """Distance from each point to its k-th nearest neighbour among the *other* points of the same set."""
    n = len(points)
    if k == 0:
        return np.zeros(n)
    out = np.empty(n)
    for start in range(0, n, _CHUNK):
        block = _distances(points[start:start + _CHUNK], points)
        # the point itself sits at distance 0: the k-th smallest of the row, counting it, is index k
        out[start:start + _CHUNK] = np.partition(block, k, axis=1)[:, k]
    return out


def _covered(queries: np.ndarray, centres: np.ndarray, centre_radii: np.ndarray) -> np.ndarray:
    """For each query: whether it lies within the radius of at least one centre."""
    inside = np.zeros(len(queries), dtype=bool)
    for start in range(0, len(queries), _CHUNK):
        block = _distances(queries[start:start + _CHUNK], centres)
        inside[start:start + _CHUNK] = (block <= centre_radii[None, :] + 1e-9).any(1)
    return inside


def knn_precision_recall(real: np.ndarray, synthetic: np.ndarray, k: int = DEFAULT_K) -> dict:
    """``{"knn_precision", "knn_recall", "knn_k"}`` of ``synthetic`` against ``real`` (rows are points)."""
    k = check_int("k", k, minimum=1)
    real, synthetic = np.asarray(real, dtype=np.float64), np.asarray(synthetic, dtype=np.float64)
    if real.ndim != 2 or synthetic.ndim != 2 or not len(real) or not len(synthetic) \
            or real.shape[1] != synthetic.shape[1]:
        raise ParameterError("features", f"<real {real.shape}, synthetic {synthetic.shape}>",
                             "must be two non-empty 2-d arrays with the same number of columns")
    k_used = min(k, len(real) - 1, len(synthetic) - 1)
    precision = _covered(synthetic, real, radii(real, k_used)).mean()
    recall = _covered(real, synthetic, radii(synthetic, k_used)).mean()
    return {"knn_precision": float(precision), "knn_recall": float(recall), "knn_k": int(k_used)}
