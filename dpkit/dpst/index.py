"""A small vector-index interface for nearest-centroid search.

DP-ST needs one nearest-neighbour query per triple: which cluster centroid is
closest (by cosine) to the triple's embedding. With the thousands of public
triples of the book an exact numpy search is fastest; a user with millions of
triples and hundreds of thousands of centroids can plug in any approximate
index (FAISS, hnswlib, a vector database) by implementing :class:`VectorIndex`:

.. code-block:: python

    class FaissIndex:                       # sketch for faiss-cpu, not shipped
        def __init__(self, vectors):
            import faiss
            self.index = faiss.IndexFlatIP(vectors.shape[1])   # or IndexHNSWFlat
            self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        def __len__(self):
            return self.index.ntotal
        def search(self, queries, top):
            scores, ids = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), top)
            return scores, ids

and passing ``index_factory=FaissIndex`` to
:meth:`dpkit.dpst.corpus.TripleCorpus.load` / ``build_public_corpus``.

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
