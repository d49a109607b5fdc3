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

A :func:`child` node carries its root's entropy (``SeedSequence`` nodes keep the
root's ``entropy`` and extend the ``spawn_key``), and NumPy's seed mixing is
invertible: even a generator's state leads back to the root. A node handed to
another process -- a worker that decodes one batch -- is therefore a
:func:`sealed_child`: its entropy is a cryptographic hash (BLAKE2b) of the
parent's entropy, spawn key and the path, from which neither the parent nor any
other node can be computed. :func:`batch_sequence` is that node for one batch
of private prediction, and :func:`batch_rng` its generator.
"""

from __future__ import annotations

import hashlib
import json

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


def _entropy_words(entropy) -> object:
    """A canonical JSON form of a ``SeedSequence``'s entropy (an int or a sequence of ints)."""
    if isinstance(entropy, (int, np.integer)):
        return str(int(entropy))
    return [str(int(x)) for x in np.asarray(entropy).reshape(-1).tolist()]


def sealed_child(sequence: np.random.SeedSequence, *path: int) -> np.random.SeedSequence:
    """A node for ``path`` below ``sequence`` that does not reveal ``sequence`` (see the module docstring).

    Its entropy is the 256-bit BLAKE2b digest of the parent's entropy, spawn key
    and pool size and of ``path``: a function of the index alone (a resumed run,
    a retry or another worker reaches the same node), one-way, and independent
    across paths as far as anyone without the parent's entropy can tell.
    """
    if not isinstance(sequence, np.random.SeedSequence):
        raise ParameterError("seed_sequence", sequence, "must be a numpy.random.SeedSequence")
    keys = [check_int("path", k, minimum=0) for k in path]
    message = json.dumps({"entropy": _entropy_words(sequence.entropy),
                          "spawn_key": [int(k) for k in sequence.spawn_key], "pool_size": int(sequence.pool_size),
                          "path": keys}, sort_keys=True).encode()
    digest = hashlib.blake2b(message, digest_size=32, person=b"dpkit.seeds.v1").digest()
    return np.random.SeedSequence(int.from_bytes(digest, "big"))


def batch_sequence(root: np.random.SeedSequence, label: int | None, number: int) -> np.random.SeedSequence:
    """The seed node of batch ``number`` of ``label`` of a private-prediction run: the sealed node
    ``(label + 1, number)`` of ``root`` (0 = no label). This node, never the root, is what a worker gets."""
    return sealed_child(root, 0 if label is None else int(label) + 1, int(number))


def batch_rng(root: np.random.SeedSequence, label: int | None, number: int) -> np.random.Generator:
    """A ``numpy.random.Generator`` on :func:`batch_sequence`."""
    return np.random.default_rng(batch_sequence(root, label, number))
