"""reliability-4 F4 (probes X8, X9): a stored comparison cell's seal removed, or its key id changed.

Before: ``integrity_problem`` checked the seal only when the cell carried one under this user's key id;
a cell sealed by this user, edited, re-digested and then stripped of its seal (X8) or given another key id
(X9) fell back to the digest, the rule for the committed unsealed results: ``load_cells`` and
``dpkit experiment compare`` ("0 cells written, 4 already done") accepted the forged value. Now the dpkit
cache records which cells each key sealed (outside the folder, beside the key), and such a cell must
still carry that seal. Cells this user never sealed (the committed results) still load by their digest.
"""

from __future__ import annotations

import json
import math

import pytest

from dpkit.cli import main
from dpkit.experiments import cli as experiment_cli
from dpkit.experiments import presets, sealing, stored
from dpkit.experiments.cell_files import cell_path
from dpkit.experiments.sweep import Sweep
from test_experiment_compare import TINY, FakeCells


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
    return tmp_path / "cache"


def _forge(path, how):
    body = json.loads(path.read_text())
    body["metrics"]["balanced_accuracy"]["estimate"] = 0.99
    body["digest"] = sealing.content_digest(body)           # what an editor without the key can recompute
    if how == "seal deleted":                       # X8
        del body["seal"]
    else:                                           # X9
        body["seal"]["key_id"] = "0000000000000000"
    path.write_text(json.dumps(body))


@pytest.mark.parametrize("how", ["seal deleted", "key id changed"])
def test_x8_x9_a_cell_that_lost_its_seal_is_refused_by_load_cells_and_compare(cache, tmp_path, monkeypatch,
                                                                               capsys, how):
    class _CLICells(FakeCells):
        def __init__(self, preset, model=None):
            super().__init__()

    monkeypatch.setattr(experiment_cli, "LocalCells", _CLICells)
    out = tmp_path / "cells"
    command = ["experiment", "compare", "--preset", "tiny", "--out", str(out)]
    assert main(command) == 0
    path = cell_path(out, "toy", "pp", math.inf, 0)
    _forge(path, how)
    with pytest.raises(stored.StoredResultError, match=f"{path.name}.*no seal under your results key"):
        stored.load_cells(out)
    capsys.readouterr()
    assert main(command) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert path.name in err and "seal was removed or its key id changed" in err and "--recompute-failed" in err
    assert json.loads(path.read_text())["metrics"]["balanced_accuracy"]["estimate"] == 0.99   # not overwritten
    assert main(command + ["--recompute-failed"]) == 0                                       # made again on request
    assert json.loads(path.read_text())["metrics"]["balanced_accuracy"]["estimate"] != 0.99
    assert len(stored.load_cells(out)) == len(list(TINY.cells()))


def test_the_record_of_sealed_cells_lives_in_the_cache_not_in_the_folder(cache, tmp_path):
    out = tmp_path / "cells"
    Sweep(TINY, out, FakeCells(), progress=lambda line: None).run()
    key = (cache / sealing.KEY_NAME).read_bytes()
    names = {p.name for p in out.glob("*.json")}
    assert sealing.sealed_here(out, key) == names and (cache / sealing.SEALED_CELLS).is_file()
    assert not {p.name for p in out.iterdir()} - names - {".lock"}


def test_cells_this_user_never_sealed_still_load_by_their_digest(cache, tmp_path):
    """The committed results' case: a cell without a seal (or another machine's), never sealed here."""
    out = tmp_path / "cells"
    Sweep(TINY, out, FakeCells(), progress=lambda line: None).run()
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in out.glob("*.json"):
        body = json.loads(path.read_text())
        del body["seal"]
        (copy / path.name).write_text(json.dumps(body))
    assert len(stored.load_cells(copy)) == len(list(TINY.cells()))
