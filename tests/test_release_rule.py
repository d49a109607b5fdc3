"""The release rule, per method, through ``dpkit synth``: neighbouring inputs give the same release folder.

Two inputs that differ in one record under the method's stated relation, chosen
adversarially (a class emptied, a record far over every size limit, a record
with no content), the same public configuration, release mode (fresh noise).
Every file of ``release/`` other than the synthetic data must be byte-identical;
the synthetic data must have the same number of records with the same fields.
For DP-KPS and DP-ST a fake text generator stands in for the LLM (the rule is
about what the folder holds, not about the text) and the private parts run for
real; private prediction decodes the private prompts on the bundled local model.
"""

import csv
import json

import pytest

import dpkit.backends
from dpkit.cli import main
from dpkit.methods.release import RELEASE_FILES

SAMPLE = "data/own_data_sample.csv"
LABELS = "billing,delivery,product"


class FakeBackend:
    name = "fake"
    remote = False
    model = "fake"

    def generate_batch(self, prompts, **generation):
        return [f"synthetic text {len(str(p))}" for p in prompts]

    def describe(self):
        return {"name": "fake", "model": "fake"}


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: FakeBackend())


def _rows():
    with open(SAMPLE, newline="", encoding="utf-8") as handle:
        return [(r["text"], r["label"]) for r in csv.DictReader(handle)]


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(rows)
    return path


def _release(tmp_path, name, method, rows):
    out = tmp_path / name
    argv = ["synth", method, "--input", str(_write(tmp_path / f"{name}.csv", rows)), "--text-column", "text",
            "--label-column", "label", "--labels", LABELS, "--epsilon", "4", "--out", str(out), "--smoke"]
    assert main(argv) == 0  # no --seed: release mode
    return out / "release"


def _assert_same_release(a, b):
    assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir()) == sorted(RELEASE_FILES)
    for name in RELEASE_FILES:
        if name != "synthetic.jsonl":
            assert (a / name).read_bytes() == (b / name).read_bytes(), f"{name} differs between neighbours"
    left, right = ([json.loads(line) for line in (x / "synthetic.jsonl").read_text().splitlines()] for x in (a, b))
    assert len(left) == len(right)
    assert [sorted(r) for r in left] == [sorted(r) for r in right]
    config = json.loads((a / "config.json").read_text())
    assert config["randomness"] == "release" and config["public_rules"]


@pytest.mark.usefixtures("fake")
def test_kps_add_remove_one_record_that_empties_a_class(tmp_path):
    """Add/remove: D has no 'product' record; D' adds one, 1 MB long (over the character cap)."""
    rows = [r for r in _rows() if r[1] != "product"][:20]
    lonely = ("The blender stopped working. " * 40_000, "product")
    without = _release(tmp_path, "without", "kps", rows)
    with_one = _release(tmp_path, "with", "kps", rows + [lonely])
    _assert_same_release(without, with_one)
    rules = json.loads((without / "config.json").read_text())["public_rules"]
    assert "empty_class" in rules and "long_document" in rules


@pytest.mark.usefixtures("fake")
def test_dpst_replace_one_record_by_an_oversized_one(tmp_path):
    """Replace-one: one record becomes 1.2 MB of text (over spaCy's limit uncut) with another label,
    and another becomes empty."""
    rows = _rows()[:8]
    changed = list(rows)
    changed[2] = ("The courier lost the parcel. " * 42_000, "billing")
    changed[5] = ("", "delivery")
    _assert_same_release(_release(tmp_path, "a", "dpst", rows), _release(tmp_path, "b", "dpst", changed))


def _hash_batch(text, n_batches):
    from dpkit.privpred.batching import batch_index

    return batch_index(text, n_batches, "")


def test_pp_one_record_moves_to_another_batch_and_a_batch_becomes_empty(tmp_path, monkeypatch):
    """Private prediction: a record is replaced by one that hashes to the other batch of its label,
    so that batch becomes empty (the review's pair); the batch layout is public, so nothing moves."""
    import dpkit.methods.pp as pp

    smoke = pp.Config.smoke
    monkeypatch.setattr(pp.Config, "smoke", classmethod(lambda cls, epsilon, **changes:
                                                        smoke(epsilon, **{"n_batches": 2, **changes})))
    pool = [f"My order number {i} arrived late." for i in range(40)]
    in_0 = [t for t in pool if _hash_batch(t, 2) == 0]
    in_1 = [t for t in pool if _hash_batch(t, 2) == 1]
    base = [(in_0[0], "delivery"), (in_1[1], "billing"), (in_0[2], "billing")]
    rows = base + [(in_1[0], "delivery")]           # delivery: one record in each batch
    moved = base + [(in_0[1], "delivery")]          # delivery: both in batch 0, batch 1 empty
    _assert_same_release(_release(tmp_path, "a", "pp", rows), _release(tmp_path, "b", "pp", moved))
