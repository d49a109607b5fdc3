"""The public triple corpus: triples of public text, embedded and clustered.

DP-ST {cite}`meisenbacher2025dpst` privatizes a triple by choosing a
replacement among *public* triples. We build that pool from the packaged news
articles (:func:`dpkit.data.load_news_articles`, disjoint from every private
data set): triples are extracted (:mod:`dpkit.dpst.triples`), near duplicates
removed (:mod:`dpkit.dpst.dedup`), embedded with the bundled MiniLM, and
clustered with scikit-learn's ``MiniBatchKMeans`` into ``k`` clusters, the
*privatization neighbourhoods*.

Storage (fast to load, no pickle): the triple bank (texts + float32 unit-norm
embeddings) and, per ``k``, the clustering (labels + unit-norm centroids) are
``.npz`` files under ``dpkit.runtime.cache_dir()/dpst``; a later call with the
same parameters loads them in milliseconds. Everything here is built from
public text only, so none of it costs privacy budget.

Clusters that MiniBatchKMeans leaves empty are dropped (every neighbourhood has
at least one member); ``TripleCorpus.k`` is the number kept and
``meta["k_requested"]`` the number asked for.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dpkit import runtime
from dpkit.data import load_news_articles
from dpkit.dpst.dedup import deduplicate_many
from dpkit.dpst.index import BruteForceIndex, IndexFactory, VectorIndex
from dpkit.dpst.triples import extract_triples_batch
from dpkit.io import atomic_path
from dpkit.models.embed import load_embedder
from dpkit.validate import ParameterError, check_int

EXTRACTION_VERSION = "svo-2"  # svo-2: fallbacks for short texts


@dataclass
class TripleBank:
    """Public triples and their embeddings (rows unit norm)."""

    texts: np.ndarray
    embeddings: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        with atomic_path(path, suffix=".npz") as tmp:
            np.savez(tmp, texts=np.asarray(self.texts, dtype=str), embeddings=self.embeddings.astype(np.float32),
                     meta=np.asarray(json.dumps(self.meta)))
        return path

    @classmethod
    def load(cls, path: str | Path) -> "TripleBank":
        with np.load(path, allow_pickle=False) as z:
            return cls(z["texts"], z["embeddings"], json.loads(str(z["meta"])))


@dataclass
class TripleCorpus:
    """Clustered public triples: neighbourhood ``c`` is ``members(c)``.

    ``labels[i]`` is the cluster of triple ``i``; ``centroids`` are unit norm.
    ``index`` answers nearest-centroid queries (exact numpy by default).
    """

    texts: np.ndarray
    embeddings: np.ndarray
    labels: np.ndarray
    centroids: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    index_factory: IndexFactory = BruteForceIndex

    def __post_init__(self) -> None:
        self.labels = np.asarray(self.labels, dtype=np.int64)
        self._order = np.argsort(self.labels, kind="stable")
        self._starts = np.searchsorted(self.labels[self._order], np.arange(len(self.centroids) + 1))
        self.index: VectorIndex = self.index_factory(self.centroids)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def k(self) -> int:
        return len(self.centroids)

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    def members(self, cluster: int) -> np.ndarray:
        """Indices of the public triples in neighbourhood ``cluster``."""
        cluster = check_int("cluster", cluster, minimum=0, maximum=self.k - 1)
        return self._order[self._starts[cluster]:self._starts[cluster + 1]]

    def sizes(self) -> np.ndarray:
        return np.diff(self._starts)

    def nearest_centroid(self, embeddings: np.ndarray) -> np.ndarray:
        """The (non-private) nearest neighbourhood of each embedding, by cosine."""
        return self.index.search(np.atleast_2d(embeddings), 1)[1][:, 0]

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        with atomic_path(path, suffix=".npz") as tmp:
            np.savez(tmp, texts=np.asarray(self.texts, dtype=str), embeddings=self.embeddings.astype(np.float32),
                     labels=self.labels, centroids=self.centroids.astype(np.float32),
                     meta=np.asarray(json.dumps(self.meta)))
        return path

    @classmethod
    def load(cls, path: str | Path, index_factory: IndexFactory = BruteForceIndex) -> "TripleCorpus":
        with np.load(path, allow_pickle=False) as z:
            return cls(z["texts"], z["embeddings"], z["labels"], z["centroids"],
                       json.loads(str(z["meta"])), index_factory)


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


def build_triple_bank(texts: Sequence[str], embedder=None, dedup: bool = True, threshold: float = 0.4,
                      num_perm: int = 128, scorer="unigram", max_phrase_tokens: int = 8,
                      meta: dict | None = None) -> TripleBank:
    """Extract, deduplicate (near duplicates per document, exact ones across) and embed public triples."""
    per_doc = [[t.text for t in doc] for doc in extract_triples_batch(texts, max_phrase_tokens=max_phrase_tokens)]
    if dedup:  # near duplicates within a document (overlapping extractions), as for private text
        per_doc = deduplicate_many(per_doc, threshold=threshold, num_perm=num_perm, scorer=scorer)
    seen, triples = set(), []
    for doc in per_doc:  # exact duplicates across documents
        for t in doc:
            if t.lower() not in seen:
                seen.add(t.lower())
                triples.append(t)
    if not triples:
        raise ParameterError("texts", f"<{len(texts)} texts>", "yielded no triple; give more public text")
    if embedder is None:
        embedder = load_embedder()
    embeddings = _unit(embedder.encode(triples))
    info = dict(meta or {})
    info.update(n_documents=len(texts), n_triples=len(triples), dedup=dedup, threshold=threshold,
                scorer=scorer if isinstance(scorer, str) else getattr(scorer, "__name__", "callable"),
                num_perm=num_perm, embedder=getattr(embedder, "name", "?"), extraction=EXTRACTION_VERSION)
    return TripleBank(np.asarray(triples, dtype=str), embeddings, info)


def cluster_bank(bank: TripleBank, k: int, seed: int = 0, batch_size: int = 1024,
                 index_factory: IndexFactory = BruteForceIndex) -> TripleCorpus:
    """MiniBatchKMeans with ``k`` clusters on the bank; empty clusters dropped."""
    from sklearn.cluster import MiniBatchKMeans

    k = check_k(k, len(bank))
    seed = check_int("seed", seed, minimum=0)
    km = MiniBatchKMeans(n_clusters=k, random_state=seed, batch_size=batch_size, n_init=3)
    km.fit(bank.embeddings)
    centroids = _unit(km.cluster_centers_)
    labels = np.argmax(bank.embeddings @ centroids.T, axis=1)  # cosine assignment to unit centroids
    used = np.unique(labels)
    remap = np.full(k, -1)
    remap[used] = np.arange(len(used))
    meta = dict(bank.meta, k_requested=k, seed=seed)
    return TripleCorpus(bank.texts, bank.embeddings, remap[labels], centroids[used], meta, index_factory)


def check_k(k: int, n_triples: int) -> int:
    """``k`` (neighbourhoods) is a count from 1 to the number of public triples: the one check, which
    ``dpkit synth --plan`` makes (:mod:`dpkit.methods.sizes`, through :func:`load_public_bank`) as a run does."""
    k = check_int("k", k, minimum=1)
    if k > n_triples:
        raise ParameterError("k", k, f"must be <= the number of public triples ({n_triples})")
    return k


#: the largest public corpus file :func:`read_public_texts` reads (each line is parsed and embedded per run)
MAX_PUBLIC_BYTES = 16 << 20


def read_public_texts(path: str | Path, parameter: str = "public_corpus") -> list[str]:
    """The user's own public corpus: a UTF-8 text file, one public text per line (blank lines skipped).

    The caller states that every line is PUBLIC (never a private record): it is read
    without any privacy charge, and its triples may be released verbatim. Refused,
    naming ``parameter``, the path and what is allowed: a path that is not a readable file,
    a file over :data:`MAX_PUBLIC_BYTES`, a file that is not UTF-8, or one without a non-blank line.
    """
    allowed = "must be a readable UTF-8 text file of public texts, one per line, with at least one non-blank line"
    if not isinstance(path, (str, Path)) or not str(path).strip():
        raise ParameterError(parameter, path, allowed)
    file = Path(path).expanduser()
    if not file.is_file():
        raise ParameterError(parameter, str(path), allowed + " (not an existing file)")
    if file.stat().st_size > MAX_PUBLIC_BYTES:
        raise ParameterError(parameter, str(path), f"must be at most {MAX_PUBLIC_BYTES >> 20} MiB (it has "
                             f"{file.stat().st_size / (1 << 20):,.1f} MiB): every line is parsed into triples and "
                             "embedded on each run; give a sample of its lines")
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ParameterError(parameter, str(path), allowed + f" (byte {exc.start} is not UTF-8)") from None
    except OSError as exc:
        raise ParameterError(parameter, str(path), allowed + f" ({exc.strerror or type(exc).__name__})") from None
    texts = [line.strip() for line in lines if line.strip()]
    if not texts:
        raise ParameterError(parameter, str(path), allowed + " (it has none)")
    return texts


def _key(params: dict) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]


def load_public_corpus(k: int = 50, n_articles: int | None = 300, max_chars: int = 1200, seed: int = 0,
                       threshold: float = 0.4, num_perm: int = 128, scorer: str = "unigram", cache: bool = True,
                       index_factory: IndexFactory = BruteForceIndex, folder: str | Path | None = None,
                       texts: Sequence[str] | None = None) -> TripleCorpus:
    """The public triple corpus from the packaged news articles, clustered into ``k`` neighbourhoods.

    ``texts``: the user's OWN public corpus instead of the news articles (e.g. public
    documents of the data's domain); the caller states that they are public: they are
    never charged, and none of them may be a private record. Each is cut at ``max_chars``;
    ``n_articles`` is then ignored. The cache key holds a digest of the texts.

    ``n_articles`` articles (``None``: all, about 3.7k), each cut at ``max_chars``
    characters. Near-duplicate ties are broken by ``scorer``: ``"unigram"``
    (default; thousands of triples on a CPU) or ``"lm"`` (the local LM's
    perplexity, as for private documents; slow on a CPU). The bank and the clustering are cached as ``.npz`` under
    ``folder`` (default ``cache_dir()/dpst``); a cached corpus loads in milliseconds.
    """
    k = check_int("k", k, minimum=1)
    bank, bank_params, root = _public_bank(n_articles, max_chars, threshold, num_perm, scorer, cache, folder, texts)
    check_k(k, len(bank))
    corpus_path = root / f"clusters-{_key(dict(bank_params, k=k, seed=seed))}.npz"
    if cache and corpus_path.exists():
        return TripleCorpus.load(corpus_path, index_factory)
    corpus = cluster_bank(bank, k, seed=seed, index_factory=index_factory)
    if cache:
        corpus.save(corpus_path)
    return corpus


def load_public_bank(n_articles: int | None = 300, max_chars: int = 1200, threshold: float = 0.4,
                     num_perm: int = 128, scorer: str = "unigram", cache: bool = True,
                     folder: str | Path | None = None, texts: Sequence[str] | None = None) -> TripleBank:
    """The public triple bank :func:`load_public_corpus` clusters (the same arguments, the same cache)."""
    return _public_bank(n_articles, max_chars, threshold, num_perm, scorer, cache, folder, texts)[0]


def _public_bank(n_articles, max_chars, threshold, num_perm, scorer, cache, folder, texts):
    """(bank, its cache parameters, the cache folder)."""
    if n_articles is not None:
        n_articles = check_int("n_articles", n_articles, minimum=1)
    max_chars = check_int("max_chars", max_chars, minimum=20)
    root = Path(folder) if folder is not None else runtime.cache_dir() / "dpst"
    own = None
    if texts is not None:
        if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts \
                or not all(isinstance(t, str) for t in texts):
            raise ParameterError("texts", type(texts).__name__, "must be a non-empty list of public texts")
        own = [t[:max_chars] for t in texts if t.strip()]
        if not own:
            raise ParameterError("texts", "<only empty texts>", "must hold at least one non-empty public text")
        digest = hashlib.sha256(json.dumps(own).encode()).hexdigest()[:16]
        bank_params = dict(source="own", texts=digest, n_texts=len(own), max_chars=max_chars, threshold=threshold,
                           num_perm=num_perm, scorer=scorer, extraction=EXTRACTION_VERSION)
    else:
        bank_params = dict(source="news_articles", n_articles=n_articles, max_chars=max_chars, threshold=threshold,
                           num_perm=num_perm, scorer=scorer, extraction=EXTRACTION_VERSION)
    bank_path = root / f"bank-{_key(bank_params)}.npz"
    if cache and bank_path.exists():
        bank = TripleBank.load(bank_path)
    else:
        if own is None:
            news = load_news_articles(max_documents=n_articles, max_chars=max_chars)
            own = list(news.train_texts) + list(news.test_texts)
        bank = build_triple_bank(own, threshold=threshold, num_perm=num_perm, scorer=scorer, meta=bank_params)
        if cache:
            bank.save(bank_path)
    return bank, bank_params, root
