"""What leaves the driver: each batch's job carries its own seed node, never the run's root
(regression of privacy-2 finding F5: the root travelled through Ray's object store, which can spill to disk).

Fast: a stand-in for Ray records every object the RayExecutor puts or submits.
"""

import pickle

import numpy as np
import pytest

from dpkit.privpred import DecodeSettings
from dpkit.privpred.executors import LocalExecutor
from dpkit.privpred.jobs import BatchJob
from dpkit.seeds import batch_sequence, sealed_child


def _root_marks(root: np.random.SeedSequence) -> list[bytes]:
    """Byte strings that would betray the root's entropy inside a pickle: its decimal digits and its words."""
    words = np.random.SeedSequence(root.entropy).generate_state(4)  # a stand-in for the root's pool
    entropy = int(root.entropy)
    return [str(entropy).encode(), entropy.to_bytes((entropy.bit_length() + 7) // 8, "little"),
            entropy.to_bytes((entropy.bit_length() + 7) // 8, "big"), words.tobytes()]


def _seeds_in(value, found):
    if isinstance(value, np.random.SeedSequence):
        found.append(value)
    elif isinstance(value, BatchJob):
        for field in value.__dataclass_fields__:
            _seeds_in(getattr(value, field), found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _seeds_in(v, found)
    return found


class FakeRay:
    """Records ``put`` and ``.remote`` calls; runs the actor's ``decode`` in process."""

    def __init__(self):
        self.sent = []
        self.results = {}

    def put(self, value):
        self.sent.append(value)
        return ("ref", len(self.sent))

    def wait(self, refs, num_returns=1):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        return self.results.pop(ref)


class FakeActor:
    def __init__(self, ray):
        self.ray = ray
        self.decode = self

    def remote(self, job, settings_ref):
        self.ray.sent.append((job, settings_ref))
        ref = ("result", len(self.ray.sent))
        self.ray.results[ref] = {"batch_id": job.batch_id, "examples": []}
        return ref


def _jobs(root):
    return [BatchJob(f"l{label}-b{number}", label, number, ("a private prompt",), "a public prompt",
                     batch_sequence(root, label, number)) for label in (0, 1) for number in (0, 1, 2)]


def test_ray_workers_receive_each_batchs_own_node_and_never_the_root(monkeypatch):
    pytest.importorskip("ray")
    from dpkit.privpred import ray_executor

    root = np.random.SeedSequence()  # release mode: fresh OS entropy
    fake = FakeRay()
    executor = ray_executor.RayExecutor(workers=2)
    monkeypatch.setattr(executor, "_connect", lambda: fake)
    monkeypatch.setattr(executor, "_ensure_actors", lambda ray, spec: setattr(executor, "_actors",
                                                                              [FakeActor(fake), FakeActor(fake)]))
    monkeypatch.setattr(ray_executor, "model_spec", lambda lm: None)
    settings = DecodeSettings(expected_batch_size=2, clip=2.0, temperature=1.0, max_private_tokens=2)
    jobs = _jobs(root)
    done = list(executor.decode(object(), iter(jobs), settings))
    assert sorted(job.batch_id for job, _ in done) == sorted(job.batch_id for job in jobs)
    submitted = [item for item in fake.sent if isinstance(item, tuple)]
    assert len(submitted) == len(jobs)
    for job, _ in submitted:  # the one seed a task carries is its own batch's node
        seeds = _seeds_in(job, [])
        assert len(seeds) == 1 and seeds[0].entropy == batch_sequence(root, job.label, job.number).entropy
        assert seeds[0].entropy != root.entropy and tuple(seeds[0].spawn_key) == ()
    blob = pickle.dumps(fake.sent)
    assert not any(mark in blob for mark in _root_marks(root))
    assert all(not isinstance(item, np.random.SeedSequence) for item in fake.sent)


def test_the_local_executor_decodes_with_the_jobs_node(monkeypatch):
    from dpkit.privpred import jobs

    seen = []
    monkeypatch.setattr(jobs, "decode_batch", lambda lm, private, public, settings, rng: seen.append(
        rng.integers(0, 2 ** 62)) or _Result())
    root = np.random.SeedSequence(7)
    jobs = _jobs(root)[:2]
    list(LocalExecutor().decode(None, jobs, settings=None))
    assert seen == [np.random.default_rng(batch_sequence(root, j.label, j.number)).integers(0, 2 ** 62)
                    for j in jobs]


class _Result:
    def to_record(self):
        return {"examples": []}


def test_sealed_nodes_are_one_way_and_index_addressed():
    root = np.random.SeedSequence(2 ** 100 + 12345)
    a, b = sealed_child(root, 1, 2), sealed_child(root, 1, 2)
    assert a.entropy == b.entropy  # a retry or another worker reaches the same node
    assert sealed_child(root, 2, 1).entropy != a.entropy and sealed_child(root, 1).entropy != a.entropy
    assert root.entropy not in (a.entropy,) and str(root.entropy) not in str(a.entropy)
    assert sealed_child(np.random.SeedSequence([1, 2, 3]), 0).entropy != sealed_child(
        np.random.SeedSequence([1, 2, 4]), 0).entropy
