"""One batch of a private-prediction run as a unit of work: :class:`BatchJob` and :func:`decode_job`.

The driver (:func:`dpkit.privpred.pipeline.generate_synthetic`) makes one job
per batch index of the public layout still missing from the run; an executor
(:mod:`dpkit.privpred.executors`, :mod:`dpkit.privpred.ray_executor`) runs
:func:`decode_job` on it, in this process or on a worker. This module sits
below both: the mechanism (:func:`~dpkit.privpred.decode.decode_batch`) is
imported here, and the executors import only this, so the scheduling of
batches and the mechanism import in one direction.

A job carries what one batch needs and nothing more: its rendered PRIVATE
prompts, its label's public prompt and the batch's own seed node
(:func:`dpkit.seeds.batch_sequence`), never the run's root.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpkit.privpred.decode import decode_batch


@dataclass(frozen=True)
class BatchJob:
    """One batch index of the public layout, ready to decode.

    ``private_prompts`` are rendered PRIVATE prompts (may be empty: empty
    batches are decoded too); ``public_prompt`` is the label's public prompt;
    ``seed`` is the batch's own seed node (:func:`dpkit.seeds.batch_sequence`),
    never the run's root.
    """

    batch_id: str
    label: int | None
    number: int
    private_prompts: tuple[str, ...]
    public_prompt: str
    seed: np.random.SeedSequence


def decode_job(lm, job: BatchJob, settings) -> dict:
    """The run record of ``job``: :func:`~dpkit.privpred.decode.decode_batch` with the batch's own generator."""
    result = decode_batch(lm, list(job.private_prompts), job.public_prompt, settings, np.random.default_rng(job.seed))
    record = result.to_record()
    record.update(batch_id=job.batch_id, label=job.label)
    return record
