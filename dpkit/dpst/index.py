"""A small vector-index interface for nearest-centroid search.

DP-ST needs one nearest-neighbour query per triple: which cluster centroid is
closest (by cosine) to the triple's embedding. With the thousands of public
triples of the book an exact numpy search is fastest (:class:`BruteForceIndex`,
the default). A user with millions of triples and hundreds of thousands of
centroids can plug in any index that implements :class:`VectorIndex`
(``__len__`` and ``search(queries, top) -> (scores, ids)``): :class:`FaissIndex`
wraps ``faiss-cpu`` (exact inner product, or HNSW with ``hnsw_neighbours``), and
hnswlib or a vector database fit the same two methods. Pass the class (or any
callable ``vectors -> index``) as ``index_factory=`` to
:func:`dpkit.dpst.corpus.load_public_corpus`, ``cluster_bank`` or
``TripleCorpus.load``.

Privacy note: the index only decides *which neighbourhood* a triple is
privatized in. In the neighbourhood-aware variant that choice is made from the
private triple and is not private at all (see :mod:`dpkit.dpst.guarantee`); an
approximate index changes which neighbourhood is picked, never the guarantee
inside it. The document-level variant does not use the index on private data.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from dpkit.validate import ParameterError, check_finite_array, check_int


@runtime_checkable
class VectorIndex(Protocol):
    """Inner-product search over fixed unit-norm vectors."""

    def __len__(self) -> int: ...

    def search(self, queries: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, ids)``, both shape ``(len(queries), top)``, best first."""
        ...


IndexFactory = Callable[[np.ndarray], VectorIndex]


class BruteForceIndex:
    """Exact inner-product search with one matrix product (the default)."""

    def __init__(self, vectors: np.ndarray):
        vectors = check_finite_array("vectors", vectors, ndim=2)
        if len(vectors) == 0:
            raise ParameterError("vectors", vectors, "needs at least one vector")
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.vectors)

    def search(self, queries: np.ndarray, top: int = 1) -> tuple[np.ndarray, np.ndarray]:
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if queries.shape[1] != self.vectors.shape[1]:
            raise ParameterError("queries", queries, f"must have {self.vectors.shape[1]} columns")
        top = check_int("top", top, minimum=1, maximum=len(self))
        scores = queries @ self.vectors.T
        if top == 1:
            ids = np.argmax(scores, axis=1)[:, None]
        else:
            part = np.argpartition(-scores, top - 1, axis=1)[:, :top]
            order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
            ids = np.take_along_axis(part, order, axis=1)
        return np.take_along_axis(scores, ids, axis=1), ids


class FaissIndex:
    """The same interface over ``faiss`` (``pip install faiss-cpu``): exact inner product by
    default, an HNSW graph (approximate, much faster for very many centroids) when
    ``hnsw_neighbours`` is given."""

    def __init__(self, vectors: np.ndarray, hnsw_neighbours: int | None = None):
        try:
            import faiss
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("FaissIndex needs faiss: pip install faiss-cpu") from exc
        vectors = check_finite_array("vectors", vectors, ndim=2)
        if len(vectors) == 0:
            raise ParameterError("vectors", vectors, "needs at least one vector")
        dim = vectors.shape[1]
        if hnsw_neighbours is None:
            self.index = faiss.IndexFlatIP(dim)
        else:
            self.index = faiss.IndexHNSWFlat(dim, check_int("hnsw_neighbours", hnsw_neighbours, minimum=2),
                                             faiss.METRIC_INNER_PRODUCT)
        self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, top: int = 1) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
        if queries.shape[1] != self.index.d:
            raise ParameterError("queries", queries, f"must have {self.index.d} columns")
        top = check_int("top", top, minimum=1, maximum=len(self))
        scores, ids = self.index.search(queries, top)
        return scores, ids.astype(np.int64)
