"""Sizes that cannot run are refused from public facts, before anything is charged or written.

:func:`check_release_sizes` is called by :func:`dpkit.methods.planning.release_plan`,
which both ``--plan`` and a run call before the run folder exists and before
the first charge. Each check reads only the configuration and public data
(the public vocabulary, the embedder's width, the public triple bank, the
local model's tokenizer and context) and the machine's available memory
(:func:`dpkit.validate.available_memory`), never the private input.
Where the run makes a check of its own, the plan calls that same function
(one owner), so the plan refuses every value the run refuses.
A refusal is a :class:`~dpkit.validate.ParameterError` naming the parameter.

What is checked (each check is the one the method would otherwise meet after
its first charge, or as an out-of-memory crash, or deep in the accountant):

* every method: the budget ``--epsilon`` at most :data:`dpkit.validate.MAX_EPSILON` (above it
  a guarantee says nothing, and the accountant's ``rho = epsilon**2 / 2`` overflows
  near 1e154: the error would name an internal ``rhos[0]``). ``release_plan`` is
  the planning step of ``dpkit synth``, so the flag is named;

* DP-KPS: ``N`` at most the public vocabulary's size; the arrays that grow
  with ``n_features`` (its random Fourier features over the embedding width and
  the vocabulary) and with ``n_per_class`` (the keyphrase sequences of every
  label) within the available memory;

* private prediction: the public prompt of each label plus ``max_new_tokens``, and a
  prompt at the record cap, within the local model's context
  (:func:`dpkit.privpred.pipeline.fitting_public_prompts`, the run's check: the model
  is loaded, as the run loads it);

* DP-ST: ``k`` at most the number of public triples (:func:`dpkit.dpst.corpus.check_k`
  on :func:`~dpkit.dpst.corpus.load_public_bank`, the bank the run clusters, cached).
"""

from __future__ import annotations

from typing import Sequence

from dpkit.dpst.corpus import check_k, load_public_bank
from dpkit.methods import METHODS
from dpkit.privpred.llamacpp_engine import is_local_backend
from dpkit.privpred.pipeline import fitting_public_prompts, resolve_local_lm
from dpkit.validate import ParameterError, check_epsilon_cap, check_fits_memory

EMBEDDING_WIDTH = 384  # all-MiniLM-L6-v2, the sentence embedder of dpkit.models.embed (public)
FLOAT_BYTES = 8


def check_release_sizes(method_name: str, config, n_labels: int, *, labels: Sequence[str] | None = None,
                        backend=None) -> None:
    """ParameterError when a size of ``config`` cannot run (see the module docstring).

    ``labels``: the public label set (private prediction renders a prompt per label; None: unlabelled);
    ``backend``: the run's backend, whose local model private prediction decodes with (None, or an object
    that is not the local backend, such as a test's stand-in: the bundled model; a backend private
    prediction cannot use is refused by name before this, in :func:`dpkit.methods.request.check_backend`).
    """
    check_epsilon_cap("--epsilon", config.epsilon)
    if method_name == "kps":
        _check_kps(config, max(1, n_labels))
    elif method_name == "pp":
        lm = resolve_local_lm(backend if is_local_backend(backend) else None)
        fitting_public_prompts(lm, METHODS["pp"].template_for(config, n_labels > 0), config,
                               labels)
    elif method_name == "dpst":
        check_k(config.k, len(load_public_bank(n_articles=config.n_articles,
                                               texts=METHODS["dpst"].own_public_texts(config))))


def _check_kps(config, n_labels: int) -> None:
    vocabulary = len(METHODS["kps"]._public_vocabulary(config.vocabulary))
    if config.N > vocabulary:
        raise ParameterError("N", config.N, f"must be <= the public vocabulary size ({vocabulary}); checked "
                             "before anything is charged or written")
    check_fits_memory("n_features", config.n_features,
                      FLOAT_BYTES * config.n_features * (EMBEDDING_WIDTH + config.N + n_labels),
                      "the random Fourier features of the embeddings and the per-class sketches")
    check_fits_memory("n_per_class", config.n_per_class, FLOAT_BYTES * config.n_per_class * n_labels * config.L,
                      f"the keyphrase sequences of {n_labels} label(s)")
