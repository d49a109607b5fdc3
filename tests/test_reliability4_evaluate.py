"""reliability-4 H5 and E8: ``dpkit evaluate`` on an edited release, and on labels that share nothing.

Before:
* H5: ``dpkit evaluate --synthetic DIR/release/synthetic.jsonl`` scored an edited release (one that
  ``verify_folder`` and ``dpkit synth`` refuse) without a word, as if it were the release;
* E8: synthetic labels that share no value with the test labels (``zzzbilling``..., or ``0``/``1``
  against names) gave balanced accuracy 0.0 [0.0, 0.0] with no word: a label-name mismatch read as a
  useless release.
Now both are one line, exit 2, before any model is loaded.
"""

from __future__ import annotations

import json

import pytest

import dpkit.experiments.evaluate_release
from dpkit.cli import main
from dpkit.runs import Run
from test_runs_faults import SAMPLE

LABELS = ("billing", "delivery", "product")
TEXTS = {"billing": ["I was charged twice for one order.", "The invoice shows a fee I never agreed to."],
         "delivery": ["My parcel is three days late.", "The courier left the box at the wrong door."],
         "product": ["The blender is loud but strong.", "The jacket runs one size small."]}


def _release(out, labels=LABELS):
    """A finished run folder as ``dpkit synth`` leaves it: ``private/`` (sealed) and ``release/`` (tracked)."""
    run = Run(out / "private", params={"method": "kps", "epsilon": 4.0}, seed=1, fsync=False)
    release = out / "release"
    release.mkdir()
    rows = [{"text": t, "label": new} for old, new in zip(LABELS, labels) for t in TEXTS[old]]
    (release / "synthetic.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (release / "config.json").write_text(json.dumps({"method": "kps", "document_type": "customer message"}))
    run.track(release)
    run.finish()
    run.close()
    return release / "synthetic.jsonl"


def _evaluate(synthetic, capsys):
    code = main(["evaluate", "--synthetic", str(synthetic), "--test", SAMPLE, "--text-column", "text",
                 "--label-column", "label", "--json"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


@pytest.fixture
def no_model(monkeypatch):
    """A refusal must come before the embedder is loaded."""
    def refuse(*a, **k):
        raise AssertionError("the embedder was loaded")
    monkeypatch.setattr(dpkit.experiments.evaluate_release, "load_embedder", refuse)


@pytest.mark.parametrize("edit", ["text", "extra line", "label"])
def test_h5_an_edited_release_of_a_run_folder_is_not_scored(tmp_path, capsys, no_model, edit):
    synthetic = _release(tmp_path / "run")
    lines = synthetic.read_text().splitlines()
    if edit == "text":
        lines[0] = lines[0].replace("charged twice", "charged three times")
    elif edit == "extra line":
        lines.append(json.dumps({"text": "A forged text.", "label": "billing"}))
    else:
        lines[0] = lines[0].replace('"billing"', '"delivery"')
    synthetic.write_text("\n".join(lines) + "\n")
    code, out, err = _evaluate(synthetic, capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("dpkit evaluate: --synthetic=") and "does not verify" in err
    assert "synthetic.jsonl" in err and "checksum" in err


def test_e8_synthetic_labels_that_share_none_with_the_test_labels_are_refused(tmp_path, capsys, no_model):
    synthetic = _release(tmp_path / "run", labels=("zzzbilling", "zzzdelivery", "zzzproduct"))
    code, out, err = _evaluate(synthetic, capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "shares no label with --test (3 labels)" in err and "'zzzbilling'" in err
    numeric = tmp_path / "numeric.jsonl"
    numeric.write_text("".join(json.dumps({"text": t, "label": i % 2}) + "\n"
                               for i, t in enumerate(sum(TEXTS.values(), []))))
    code, _, err = _evaluate(numeric, capsys)
    assert code == 2 and "shares no label with --test" in err and "'0', '1'" in err


def test_an_unedited_release_and_a_release_copied_out_of_its_folder_are_scored(tmp_path, capsys):
    synthetic = _release(tmp_path / "run")
    code, out, err = _evaluate(synthetic, capsys)
    assert code == 0, err
    assert json.loads(out)["n_synthetic"] == 6
    copy = tmp_path / "copy.jsonl"                      # nothing to check it against: scored as given
    copy.write_text(synthetic.read_text().replace("charged twice", "charged three times"))
    code, out, err = _evaluate(copy, capsys)
    assert code == 0 and json.loads(out)["n_synthetic"] == 6


def test_e11_a_negative_seed_names_the_flag(tmp_path, capsys, no_model):
    """E11 (held, but named ``seed``, the library's parameter, not the ``--seed`` the user typed)."""
    synthetic = _release(tmp_path / "run")
    code = main(["evaluate", "--synthetic", str(synthetic), "--test", SAMPLE, "--text-column", "text",
                 "--label-column", "label", "--seed", "-1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == "dpkit evaluate: --seed=-1 is invalid: must be >= 0"
