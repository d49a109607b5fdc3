"""Randomness as a tree of ``numpy.random.SeedSequence`` nodes: one root per run, a child per phase, batch, document.

Two modes, one code path:

* **release mode** -- ``root_sequence(None)``: the root takes fresh entropy from
  the operating system (``SeedSequence()``). Nothing that could regenerate the
  noise is written anywhere; this is the mode of a differentially private release.
* **reproducible mode** -- ``root_sequence(seed)``: the same seed gives the same
  noise. For teaching and tests only: anyone who knows the seed can regenerate
  (and subtract) the noise, so this is NOT a differentially private release.

:func:`child` addresses a node by a path of integers. It is exactly the node
that ``SeedSequence.spawn`` would give as the ``k``-th child (same entropy,
``spawn_key`` extended by ``k``), but computed from the index, without the
spawn counter's state: a resumed run, a second worker or a retry reaches the
same node for the same batch index. Streams of different paths are independent
in the sense of NumPy's ``SeedSequence``; no stream is ever made from ``seed + k``.
"""

from __future__ import annotations

import numpy as np

from dpkit.validate import ParameterError, check_int


def root_sequence(seed: int | None) -> np.random.SeedSequence:
    """Fresh OS entropy when ``seed`` is None (release mode), else the reproducible root of ``seed``."""
    if seed is None:
        return np.random.SeedSequence()
    return np.random.SeedSequence(check_int("seed", seed, minimum=0))


def child(sequence: np.random.SeedSequence, *path: int) -> np.random.SeedSequence:
    """The node reached from ``sequence`` by spawn indices ``path`` (see the module docstring)."""
    if not isinstance(sequence, np.random.SeedSequence):
        raise ParameterError("seed_sequence", sequence, "must be a numpy.random.SeedSequence")
    keys = tuple(check_int("path", k, minimum=0) for k in path)
    return np.random.SeedSequence(sequence.entropy, spawn_key=tuple(sequence.spawn_key) + keys,
                                  pool_size=sequence.pool_size)


def generator(sequence: np.random.SeedSequence, *path: int) -> np.random.Generator:
    """A ``numpy.random.Generator`` on the node ``child(sequence, *path)``."""
    return np.random.default_rng(child(sequence, *path))


def int_seed(sequence: np.random.SeedSequence, *path: int) -> int:
    """A 31-bit integer drawn from the node ``child(sequence, *path)``, for APIs that take an int seed
    (e.g. an LLM's sampling of post-processed text)."""
    return int(child(sequence, *path).generate_state(1, dtype=np.uint32)[0] >> 1)
