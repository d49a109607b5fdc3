"""The release rule of private prediction: public batch layout, empty batches, no sizes, caps, randomness."""

import json

import numpy as np
import pytest

from dpkit.privpred import PrivatePredictionConfig, generate_synthetic, get_template
from dpkit.privpred.batching import batch_index
from dpkit.privpred.pipeline import EMPTY_RECORD, batch_rng, cap_record, root_seed
from dpkit.privpred.sampling import private_log_weights, sample_private_token
from dpkit.privpred.svt import svt_distance


def test_an_empty_batch_is_the_same_mechanism_on_zero_prompts():
    # zbar = 0: every candidate has log-weight 0 (a uniform draw); d = ||0 - p_pub||_1 = 1
    empty = np.zeros((0, 7))
    assert np.array_equal(private_log_weights(empty, 2.0, 4, 1.0), np.zeros(7))
    assert svt_distance(empty, np.arange(7.0), 4) == pytest.approx(1.0, abs=1e-15)
    # 0 -> 1 prompts: the averaged clipped logits move by at most c/s, the distance by at most 1/s
    one = np.array([[9.0, -3, 0.5, 40, 2, 2, -7]])
    moved = private_log_weights(one, 2.0, 4, 1.0)
    assert np.max(np.abs(moved)) <= 2.0 / 4 + 1e-15
    assert abs(svt_distance(one, np.arange(7.0), 4) - 1.0) <= 1 / 4 + 1e-15
    draws = sample_private_token(empty, 2.0, 4, 1.0, np.random.default_rng(0), allowed=[1, 4, 6], size=3000)
    counts = np.bincount(draws, minlength=7)
    assert set(np.flatnonzero(counts)) == {1, 4, 6} and np.all(np.abs(counts[[1, 4, 6]] - 1000) < 120)


def test_batch_randomness_is_a_sealed_node_of_the_root():
    """A batch's node depends on the root and its index alone, and does not carry the root's entropy."""
    from dpkit.seeds import batch_sequence

    root = np.random.SeedSequence(1234)
    ours = batch_rng(np.random.SeedSequence(1234), 1, 4)
    assert ours.integers(0, 2 ** 62, 4).tolist() == batch_rng(root, 1, 4).integers(0, 2 ** 62, 4).tolist()
    assert batch_rng(root, 0, 0).integers(0, 2 ** 62) != batch_rng(root, 0, 1).integers(0, 2 ** 62)
    assert batch_rng(root, 0, 1).integers(0, 2 ** 62) != batch_rng(root, 1, 0).integers(0, 2 ** 62)
    node = batch_sequence(root, 1, 4)
    assert node.entropy != root.entropy and tuple(node.spawn_key) == ()  # a fresh root, not a child of ours
    spawned = root.spawn(3)[2].spawn(5)[4]  # the spawned child keeps the root's entropy: never sent anywhere
    assert spawned.entropy == root.entropy and node.entropy != spawned.entropy
    assert batch_sequence(np.random.SeedSequence(1235), 1, 4).entropy != node.entropy
    fresh, reproducible = root_seed(None)
    assert not reproducible and fresh.entropy != root_seed(None)[0].entropy
    assert root_seed(7)[1] and root_seed(7)[0].entropy == 7
    assert root_seed(root) == (root, None)  # a caller's root: the caller's mode


@pytest.fixture(scope="module")
def lm():
    from dpkit.models import load_lm

    return load_lm()


def _by_batch(n_batches):
    pool = [f"a fine little film number {i}" for i in range(200)]
    out = {}
    for t in pool:
        out.setdefault(batch_index(t, n_batches, ""), []).append(t)
    return out


CFG = dict(epsilon=10.0, delta=1e-5, expected_batch_size=4, clip=1.0, temperature=1.0, top_k=20, max_new_tokens=3,
           max_examples_per_batch=1)


@pytest.mark.slow
def test_neighbouring_inputs_release_the_same_batch_indices(lm, tmp_path):
    """The review's pair: one record more makes an empty batch non-empty; the release's shape must not move."""
    from dpkit.runs import Run

    cfg = PrivatePredictionConfig(**CFG)
    by = _by_batch(3)
    d = [by[0][0], by[0][1]]
    d1 = d + [by[1][0]]
    shapes = []
    for i, recs in enumerate((d, d1)):
        run = Run(tmp_path / f"run{i}", params=cfg.to_dict(), seed=0)
        res = generate_synthetic(recs, get_template("sentiment"), cfg, labels=[0] * len(recs),
                                 label_names=["negative", "positive"], n_batches=3, model=lm, run=run)
        assert not res.reproducible and "NOT" not in res.randomness_note
        assert "mean_batch_size" not in res.stats
        assert all("batch_size" not in b for b in res.batches)
        written = (tmp_path / f"run{i}" / "records.jsonl").read_text()
        assert "batch_size" not in written and "forward_passes" not in written
        shapes.append(([b["batch_id"] for b in res.batches], len(res.examples), res.ledger.epsilon()))
    assert shapes[0] == shapes[1]
    assert shapes[0][0] == [f"l{l}-b{b}" for l in range(2) for b in range(3)] and shapes[0][1] == 6
    # max_batches keeps batch NUMBERS, not the first non-empty batches
    e = [by[1][0], by[2][0]]
    for recs in (e, e + [by[0][0]]):
        res = generate_synthetic(recs, get_template("sentiment"), cfg, labels=[0] * len(recs),
                                 label_names=["negative", "positive"], n_batches=3, model=lm, max_batches=1, seed=0)
        assert [b["batch_id"] for b in res.batches] == ["l0-b0", "l1-b0"] and res.reproducible


@pytest.mark.slow
def test_long_and_empty_records_never_abort_a_release(lm):
    cfg = PrivatePredictionConfig(**{**CFG, "max_record_tokens": 16})
    long = "A long, winding and often exasperating film. " * 400
    capped = cap_record(lm, long, 16)
    assert len(lm.tokenizer(capped, add_special_tokens=False)["input_ids"]) <= 17 and long.startswith(capped[:20])
    assert cap_record(lm, "   ", 16) == EMPTY_RECORD
    kw = dict(labels=[0, 0, 0], label_names=["positive"], n_batches=2, model=lm, seed=1)
    res = generate_synthetic(["Nice film.", long, ""], get_template("sentiment"), cfg, **kw)
    assert [b["batch_id"] for b in res.batches] == ["l0-b0", "l0-b1"] and len(res.examples) == 2
    again = generate_synthetic(["Nice film.", long, ""], get_template("sentiment"), cfg, **kw)
    assert json.dumps(res.batches) == json.dumps(again.batches)
    assert [e.text for e in res.examples] == [e.text for e in again.examples]
