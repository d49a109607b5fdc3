"""DP-ST: privatize documents through public semantic triples {cite}`meisenbacher2025dpst`.

Pipeline, one module per step:

* :mod:`~dpkit.dpst.triples` -- subject-verb-object triples from a spaCy dependency parse;
* :mod:`~dpkit.dpst.dedup` -- near-duplicate triples removed (MinHash LSH, LM perplexity ties);
* :mod:`~dpkit.dpst.corpus` / :mod:`~dpkit.dpst.index` -- the public triple corpus, k-means
  neighbourhoods, cached as ``.npz``; a pluggable vector index;
* :mod:`~dpkit.dpst.generated_bank` -- a public corpus of the data's kind, written by the model from the
  public document type and label set only (``public_bank="generated"``);
* :mod:`~dpkit.dpst.mechanism` -- the exponential mechanism with utility clip(cos, 0, 1);
* :mod:`~dpkit.dpst.privatize` -- whole documents, neighbourhood-aware (paper) and
  document-level variants, each with its contract;
* :mod:`~dpkit.dpst.guarantee` -- exact privacy losses of both variants;
* :mod:`~dpkit.dpst.reconstruct` -- LLM reconstruction with the Table 3 prompt shape;
* :mod:`~dpkit.dpst.evaluate` -- similarity, attackers, utility, relative gain.
"""

from dpkit.dpst.corpus import TripleBank, TripleCorpus, build_triple_bank, cluster_bank, load_public_corpus
from dpkit.dpst.dedup import deduplicate, deduplicate_many, lm_perplexity, near_duplicate_groups, unigram_perplexity
from dpkit.dpst.hashing import HashEmbedder
from dpkit.dpst.index import BruteForceIndex, FaissIndex, VectorIndex
from dpkit.dpst.mechanism import (clipped_cosine, log_probabilities, nearest_neighbourhood,
                                  sample_in_neighbourhood, sample_neighbourhood, triple_contract)
from dpkit.dpst.privatize import DPST, NoTriplesError, Prepared, PrivateDocument, document_budget
from dpkit.dpst.triples import Triple, extract_triples, extract_triples_batch, load_parser

__all__ = [
    "BruteForceIndex", "DPST", "FaissIndex", "HashEmbedder", "NoTriplesError", "Prepared", "PrivateDocument", "Triple",
    "TripleBank", "TripleCorpus", "VectorIndex", "build_triple_bank", "cluster_bank", "clipped_cosine",
    "deduplicate", "deduplicate_many", "document_budget", "extract_triples", "extract_triples_batch", "lm_perplexity",
    "load_parser", "load_public_corpus", "log_probabilities", "near_duplicate_groups", "nearest_neighbourhood",
    "sample_in_neighbourhood", "sample_neighbourhood", "triple_contract", "unigram_perplexity",
]
