"""The table of benchmarks/heldout_rows.py's stored runs, and the copy of it in results/README.md."""

import json
from pathlib import Path

import pytest

from dpkit.experiments.rows_report import before_after_table, first_texts, load_rows, rows_table

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "results" / "heldout-questions"


def _row(method, repeat, ba, wall=100.0, n=10, talk=0.0):
    evaluation = {"balanced_accuracy": {"estimate": ba, "low": ba - 0.05, "high": ba + 0.05}, "n_synthetic": n,
                  "real": {"balanced_accuracy": {"estimate": 0.99}},
                  "text_measures": {"assistant_talk": talk, "short_texts": 0.0, "knn_precision": 0.5,
                                    "knn_recall": 0.25, "auroc_real_vs_synthetic": 0.9}}
    return {"method": method, "repeat": repeat, "wall_s": wall, "evaluation": evaluation}


def test_one_release_keeps_its_bootstrap_interval_and_several_get_a_t_interval():
    table = rows_table([_row("kps", 0, 0.70), _row("pp", 0, 0.60), _row("pp", 1, 0.80, talk=0.1)]).splitlines()
    kps = next(line for line in table if line.startswith("| DP-KPS"))
    pp = next(line for line in table if line.startswith("| private prediction"))
    assert "0.700 [0.650, 0.750]" in kps
    # mean 0.7, sd 0.1414, t(0.975, 1) = 12.706: half width 1.2706
    assert "| 2 | 100, 100 | 10, 10 | 0.700 [-0.571, 1.971] | 0.990 | 0.05 |" in pp
    assert not any(line.startswith("| DP-ST") for line in table)


def test_a_run_that_failed_is_not_scored(tmp_path):
    failed = {"method": "dpst", "repeat": 0, "wall_s": 5.0, "status": 1, "error": "boom"}
    lines = [json.dumps(r) for r in (_row("kps", 0, 0.5), failed, _row("kps", 0, 0.9))]
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
    rows = load_rows(tmp_path)
    assert len(rows) == 2  # the later line of kps/0 replaces the earlier one
    table = rows_table(rows)
    assert "0.900" in table and "DP-ST" not in table


def test_first_texts_follow_the_release_order_per_label(tmp_path):
    release = tmp_path / "rep-0" / "pp" / "release"
    release.mkdir(parents=True)
    records = [{"label": "a", "text": f"a{i}"} for i in range(4)] + [{"label": "b", "text": "b0"}]
    (release / "synthetic.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert first_texts(tmp_path, "pp", n=2) == [("a", "a0"), ("a", "a1"), ("b", "b0")]
    assert first_texts(tmp_path, "kps") == []


@pytest.mark.parametrize("stored", [STORED] + [ROOT / "results" / name for name in
                                             ("heldout-situations", "heldout-situations-topic", "heldout-problems",
                                              "heldout-general", "heldout-passages", "heldout-collections-ft",
                                              "heldout-collections-ft-eps1", "heldout-collections-ft-public",
                                              "heldout-collections-ft-untuned", "heldout-collections",
                                              "heldout-collections-dpst-generated", "heldout-collections-pp-ink")],
                         ids=lambda p: p.name)
def test_the_readme_quotes_the_stored_table(stored):
    if not (stored / "results.jsonl").exists():
        pytest.skip(f"the held-out 1,000-row runs of {stored.name} are not stored")
    table = rows_table(load_rows(stored))
    assert table in (ROOT / "results" / "README.md").read_text()


def _store(folder, texts, looping, duplicates, ba=0.7):
    release = folder / "rep-0" / "pp" / "release"
    release.mkdir(parents=True)
    (release / "synthetic.jsonl").write_text("".join(json.dumps({"label": "a", "text": t}) + "\n" for t in texts))
    row = _row("pp", 0, ba)
    row["evaluation"]["text_measures"].update(looping_texts=looping, duplicate_texts=duplicates)
    (folder / "results.jsonl").write_text(json.dumps(row) + "\n")


def test_before_after_table_reads_both_runs_and_the_longest_loop(tmp_path):
    _store(tmp_path / "b", ["x y x y x y x y", "a b"], 0.5, 0.0, ba=0.6)     # "x y" 4 times
    _store(tmp_path / "a", ["x y z", "a b"], 0.0, 0.0)
    lines = before_after_table({"toy": (tmp_path / "b", tmp_path / "a")}).splitlines()
    assert lines[2] == "| toy | before | 100 | 0.600 [0.550, 0.650] | 0.50 | 0.00 | 4 | 0.50 / 0.25 | 0.90 |"
    assert lines[3].startswith("| toy | after | 100 | 0.700 [0.650, 0.750] | 0.00 | 0.00 | 1 |")


#: the stored before/after runs of private prediction's no-repeat rule, as results/README.md quotes them
NO_REPEAT_PAIRS = {"health_tweets (tuned on)": ("tuning-pp-health-before", "tuning-pp-health-after"),
                   "medical (tuned on)": ("tuning-pp-medical-before", "tuning-pp-medical-after"),
                   "general_questions (held out)": ("heldout-general-before", "heldout-general")}


def test_the_readme_quotes_the_no_repeat_before_after_table():
    pairs = {name: (ROOT / "results" / b, ROOT / "results" / a) for name, (b, a) in NO_REPEAT_PAIRS.items()
             if (ROOT / "results" / b / "results.jsonl").exists() and (ROOT / "results" / a / "results.jsonl").exists()}
    if not pairs:
        pytest.skip("the before/after runs of the no-repeat rule are not stored")
    table = before_after_table(pairs)
    assert table in (ROOT / "results" / "README.md").read_text()
    # what results/README.md says of it: after the rule no text holds a word pair 4 times, and on the tuning sets no
    # text repeats an earlier one (on the held-out set some do: the rule acts within a text, not across batches)
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[1] == "after":
            assert int(cells[6]) <= 3, line
            if "tuned on" in cells[0]:
                assert float(cells[5]) == 0.0, line


def test_every_release_gets_its_own_line(tmp_path):
    _store(tmp_path / "b", ["x y x y x y", "a b"], 0.5, 0.0, ba=0.6)
    _store(tmp_path / "a", ["x y z", "a b"], 0.0, 0.0)
    rows = [json.loads(line) for line in (tmp_path / "a" / "results.jsonl").read_text().splitlines()]
    second = dict(rows[0], repeat=1)
    second["evaluation"] = json.loads(json.dumps(rows[0]["evaluation"]))
    second["evaluation"]["balanced_accuracy"]["estimate"] = 0.8
    (tmp_path / "a" / "results.jsonl").write_text(json.dumps(rows[0]) + "\n" + json.dumps(second) + "\n")
    (tmp_path / "a" / "rep-1").symlink_to(tmp_path / "a" / "rep-0")
    lines = before_after_table({"toy": (tmp_path / "b", tmp_path / "a")}, every_release=True).splitlines()
    assert [line.split("|")[2].strip() for line in lines[2:]] == ["before 1", "after 1", "after 2"]
    assert "| 0.800 [" in lines[4]


def test_difference_of_means_is_welchs_interval():
    from scipy import stats

    from dpkit.experiments.rows_report import difference_of_means

    after, before = [0.70, 0.72, 0.74], [0.60, 0.61, 0.65, 0.66]
    d = difference_of_means(after, before)
    welch = stats.ttest_ind(after, before, equal_var=False)
    ci = welch.confidence_interval(0.95)
    assert d["mean"] == pytest.approx(0.72 - 0.63) and d["rises"]
    assert (d["low"], d["high"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
    assert difference_of_means(before, after)["falls"]
    with pytest.raises(ValueError, match="two releases"):
        difference_of_means([0.7], before)


def test_the_readme_quotes_the_rule_on_and_off_releases_of_the_seventh_set():
    """The seventh held-out set's question: does the no-repeat rule cost short texts? Three releases a side."""
    from dpkit.experiments.rows_report import difference_of_means, longest_loops, scores

    on, off = ROOT / "results" / "heldout-passages", ROOT / "results" / "heldout-passages-before"
    if not ((on / "results.jsonl").exists() and (off / "results.jsonl").exists()):
        pytest.skip("the seventh set's rule on/off releases are not stored")
    table = before_after_table({"short_passages (held out)": (off, on)}, every_release=True)
    readme = (ROOT / "results" / "README.md").read_text()
    assert table in readme
    effect = difference_of_means(scores(on, "pp"), scores(off, "pp"))
    assert len(scores(on, "pp")) == len(scores(off, "pp")) == 3
    # what results/README.md says: the interval holds 0 (no cost, no gain shown); the rule bounds the longest loop
    assert effect["low"] < 0 < effect["high"]
    assert f"{effect['mean']:+.3f} [{effect['low']:+.3f}, {effect['high']:+.3f}]".replace("-", "−") in readme
    assert max(longest_loops(on, "pp")) <= 4 < 5 <= min(longest_loops(off, "pp"))
