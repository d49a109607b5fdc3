"""A large input costs memory for the rows a run keeps, never for the file (reliability probe: a 200 MB input).

The 200 MB CSV of the reliability review grew ``dpkit synth kps --smoke`` to 18 GB: the
reader held the file's bytes, its decoded text and a dict per row, every row was kept, and
DP-KPS's class sketches gathered one embedding row per keyphrase occurrence. Here a file
of a few MB and one ten times smaller go through the same paths, and what is held must
not grow with the file: the reader's traced peak, the rows handed to a method, the
sketch's working set. The 200 MB measurement itself is in the closing note, not here.
"""

import argparse
import csv
import random
import tracemalloc

import numpy as np
import pytest

from dpkit.cli import main
from dpkit.data.selection import RowRule
from dpkit.data.tables import read_table

SAMPLE = "data/own_data_sample.csv"


def _file(tmp_path, megabytes: float, name: str):
    """Rows of the sample file, each made distinct by its number (identical records are kept or dropped together)."""
    rows = list(csv.reader(open(SAMPLE, encoding="utf-8", newline="")))[1:]
    chooser = random.Random(0)
    path = tmp_path / name
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["text", "label"])
        number = 0
        while handle.tell() < megabytes * 2**20:
            text, label = chooser.choice(rows)
            writer.writerow([f"{text} (#{number})", label])
            number += 1
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("large")
    return _file(folder, 0.4, "small.csv"), _file(folder, 4, "large.csv")


def _traced_peak(function):
    tracemalloc.start()
    try:
        result = function()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_reader_holds_the_kept_rows_not_the_file(files):
    small, large = files
    rule = RowRule("hash", fraction=0.002)
    (kept_small, peak_small) = _traced_peak(lambda: read_table(small, "text", "label", rule=rule))
    (kept_large, peak_large) = _traced_peak(lambda: read_table(large, "text", "label", rule=rule))
    size = large.stat().st_size
    assert kept_large.rows_read > 40_000 and 0 < len(kept_large) < kept_large.rows_read / 100
    assert peak_large < size / 8, f"the reader's peak {peak_large} bytes is not small beside the {size}-byte file"
    assert peak_large < 2 * peak_small + 256 * 1024, (peak_small, peak_large)  # it does not grow with the file
    # the rows kept are exactly those the per-record rule keeps when the whole file is read
    whole = read_table(large, "text", "label")
    assert len(whole) == kept_large.rows_read
    assert kept_large.texts == tuple(whole.texts[i] for i in rule.select(whole.texts, whole.labels))


def test_a_prefix_stops_reading_at_its_limit(tmp_path):
    path = tmp_path / "tail.csv"
    path.write_bytes(b"text,label\n" + b"".join(b"row %d,a\n" % i for i in range(20)) + b"\x00 binary tail\n")
    table = read_table(path, "text", "label", rule=RowRule("prefix", limit=12))
    assert table.texts == tuple(f"row {i}" for i in range(12)) and table.rows_read == 12
    with pytest.raises(Exception, match="binary"):
        read_table(path, "text", "label")  # the whole file is read when no prefix is asked for


def _plan(method, path, *extra):
    from dpkit.methods.cli import register
    from dpkit.methods.request import plan

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return plan(parser.parse_args(["synth", method, "--input", str(path), "--text-column", "text",
                                   "--label-column", "label", "--epsilon", "4", "--out", "unused", *extra]))


@pytest.mark.parametrize("method,bound", [("kps", 400), ("pp", 120), ("dpst", 12)])
def test_a_smoke_plan_hands_the_method_a_bounded_number_of_rows(files, method, bound):
    small, large = files
    extra = ("--smoke",) if method == "dpst" else ("--smoke", "--rows", "40000")  # about 200 (kps) or 48 (pp) rows
    held = {path: _traced_peak(lambda: _plan(method, path, *extra)) for path in (small, large)}
    (p_large, peak_large), (_, peak_small) = held[large], held[small]
    assert 0 < len(p_large.records) <= bound
    assert peak_large < 2 * peak_small + 1024 * 1024, (peak_small, peak_large)
    assert p_large.params["input_sha256"] != held[small][0].params["input_sha256"]  # the whole file is digested


@pytest.mark.parametrize("method", ["kps", "pp"])
def test_smoke_refuses_more_rows_than_its_public_bound(files, tmp_path, capsys, method):
    _, large = files
    out = tmp_path / "run"
    assert main(["synth", method, "--input", str(large), "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--out", str(out), "--smoke"]) == 2
    err = capsys.readouterr().err
    assert "--smoke" in err and "--rows" in err and "Traceback" not in err
    assert not out.exists()


def test_the_independent_sketch_from_term_weights_equals_the_sketch_over_occurrences():
    """DP-KPS sums a class's sketch per term (memory O(N)); the released number is the same sum."""
    from dpkit.kps.kde import document_weights, kde_sketch
    from dpkit.kps.pipeline import class_term_weights
    from dpkit.kps.rff import RandomFourierFeatures

    rng = np.random.default_rng(3)
    embeddings = rng.normal(size=(30, 8))
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    docs = [list(rng.choice(30, size=rng.integers(0, 6), replace=False)) for _ in range(500)]
    labels = rng.integers(0, 3, size=len(docs))
    features = RandomFourierFeatures(8, 64, 1.0, np.random.default_rng(4))
    weights = class_term_weights(iter(docs), labels, 3, 30)
    for label in range(3):
        mine = [d for d, y in zip(docs, labels) if y == label]
        ids = [i for doc in mine for i in doc]
        owners = [k for k, doc in enumerate(mine) for _ in doc]
        expected = kde_sketch(embeddings[ids], features, document_weights(owners, "mean")[0])
        np.testing.assert_allclose(kde_sketch(embeddings, features, weights[label]), expected, atol=1e-9)
        assert weights[label].sum() == pytest.approx(sum(1 for d in mine if d))  # each document weighs 1


def test_the_faster_row_hash_is_the_documented_hmac():
    """The reader hashes every row, so the hash reuses a keyed HMAC and one JSON encoder; the rule is unchanged:
    HMAC-SHA256(sha256("dpkit row selection\\0" + salt), json.dumps([text, label], ensure_ascii=False))."""
    import hashlib
    import hmac
    import json

    from dpkit.data.selection import keep

    chooser = random.Random(1)
    for _ in range(2000):
        text = "".join(chooser.choice('ab é"\\\n中') for _ in range(chooser.randint(0, 30)))
        label, fraction = chooser.choice([None, "x", "1", "é"]), chooser.random()
        salt = chooser.choice(["dpkit-rows-v1", "another public salt"])
        key = hashlib.sha256(b"dpkit row selection\x00" + salt.encode("utf-8")).digest()
        digest = hmac.new(key, json.dumps([text, label], ensure_ascii=False).encode("utf-8"), hashlib.sha256).digest()
        assert keep(text, label, fraction, salt) == (int.from_bytes(digest[:8], "big") < int(fraction * 2**64))


def test_a_rule_that_keeps_no_row_names_its_flag(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["synth", "kps", "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--out", str(out), "--sample-fraction", "1e-12"]) == 2
    err = capsys.readouterr().err
    assert "--sample-fraction" in err and "kept no row" in err and "Traceback" not in err and not out.exists()
