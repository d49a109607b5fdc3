"""What private decoding costs against plain generation: seconds per token of one non-private text.

The yardstick of "x non-private generation" (InvisibleInk's paper reports its cost this way):
:func:`plain_seconds_per_token` times ONE text of ``tokens`` new tokens on the same model and runtime that
private prediction decodes with, end token masked so that the work is fixed, prefill included. A private
release's cost per released token divided by it is the multiple. Timings on a shared machine move with its
load: report the load average (:func:`load_average`) beside them.
"""

from __future__ import annotations

import os
import time

import torch

from dpkit.privpred.llamacpp_engine import is_llamacpp
from dpkit.validate import check_int


def load_average() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover - platforms without getloadavg
        return 0.0


def plain_seconds_per_token(lm, rendered_prompt: str, tokens: int) -> float:
    """Seconds per token of plain greedy generation of one text after ``rendered_prompt`` (``tokens`` new tokens).

    ``lm``: what :func:`dpkit.privpred.resolve_local_lm` returns (llama.cpp's engine or PyTorch's LocalLM).
    """
    tokens = check_int("tokens", tokens, minimum=1)
    start = time.perf_counter()
    if is_llamacpp(lm):
        out = lm.llm.generate_ids([lm.llm.tokenize(rendered_prompt)], max_new_tokens=tokens, stop_at_end=False)
        assert len(out[0]) == tokens
    else:
        batch = lm.encode([rendered_prompt])
        with torch.inference_mode():
            lm.model.generate(**batch, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False)
    return (time.perf_counter() - start) / tokens
