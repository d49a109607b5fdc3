"""Private prediction {cite}`amin2024private`: batched private decoding of sensitive prompts.

Modules, one idea each:

* :mod:`~dpkit.privpred.batching` -- hash batching (Assumption 1);
* :mod:`~dpkit.privpred.clipping` -- Eq. (1) clip-and-recentre, aggregation by the expected batch size;
* :mod:`~dpkit.privpred.sampling` -- one private token (exponential mechanism, Gumbel-max);
* :mod:`~dpkit.privpred.svt` -- the sparse-vector test against the public prompt;
* :mod:`~dpkit.privpred.stepping` -- cached decoding steps of several row groups, sharing weight reads;
* :mod:`~dpkit.privpred.rows` -- the decoding state of a group of prompts (grouped steps or the model's forward);
* :mod:`~dpkit.privpred.private_rows` -- a batch's private prompts one row at a time, memory bounded publicly;
* :mod:`~dpkit.privpred.llamacpp_engine` -- the same rows' logits on llama.cpp (the CPU default), :func:`runtime_name`;
* :mod:`~dpkit.privpred.grammar` -- a public JSON record grammar that restricts the candidates;
* :mod:`~dpkit.privpred.decode` -- one batch with the KV cache (one step per token);
* :mod:`~dpkit.privpred.prompts` -- the prompts of Appendix F.2, as data;
* :mod:`~dpkit.privpred.jsonrecords` -- JSON records, schema and validation (the Table 4 task);
* :mod:`~dpkit.privpred.jobs` -- one batch as a unit of work (its prompts and its own seed node);
* :mod:`~dpkit.privpred.executors`, :mod:`~dpkit.privpred.ray_executor` -- who decodes the jobs (here, Ray);
* :mod:`~dpkit.privpred.pipeline` -- budget -> cap r -> batches -> synthetic data, on a local model only.

Imports run one way: pipeline -> executors -> ray_executor -> jobs -> decode -> the mechanism's modules
(``tests/test_import_graph.py`` checks that dpkit has no import cycle).
"""

from dpkit.privpred.batching import Batch, assign_batches, batch_index, n_batches_for
from dpkit.privpred.clipping import (aggregate_logits, aggregate_sensitivity, clip_and_recenter, clip_fixed,
                                     restrict_to, top_k_indices)
from dpkit.privpred.decode import BatchResult, DecodeSettings, Example, decode_batch
from dpkit.privpred.llamacpp_engine import LlamaCppPrivateLM, runtime_name
from dpkit.privpred.pipeline import (PrivatePredictionConfig, RemoteBackendError, SyntheticResult,
                                     generate_synthetic, resolve_local_lm)
from dpkit.privpred.prompts import TEMPLATES, PromptTemplate, get_template, json_template
from dpkit.privpred.sampling import (private_log_weights, sample_private_token, sample_public_token,
                                     token_epsilon, token_log_probabilities, token_rho, worst_case_log_ratio)
from dpkit.privpred.svt import check_svt_parameters, mean_softmax, svt_distance, svt_gate, svt_rho, svt_step

__all__ = [
    "Batch", "BatchResult", "DecodeSettings", "Example", "PromptTemplate", "PrivatePredictionConfig",
    "RemoteBackendError", "SyntheticResult", "TEMPLATES", "aggregate_logits", "aggregate_sensitivity",
    "assign_batches", "batch_index", "check_svt_parameters", "clip_and_recenter", "clip_fixed", "decode_batch",
    "generate_synthetic", "get_template", "json_template", "LlamaCppPrivateLM", "runtime_name", "mean_softmax", "n_batches_for",
    "private_log_weights", "resolve_local_lm", "restrict_to", "sample_private_token", "sample_public_token",
    "svt_distance", "svt_gate", "svt_rho", "svt_step", "token_epsilon", "token_log_probabilities", "token_rho",
    "top_k_indices", "worst_case_log_ratio",
]
