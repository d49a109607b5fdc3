"""reliability-3 probes 40, 41 and 42: stored comparison cells that fail verification, and edits that re-digest.

Before: ``dpkit experiment compare`` silently recomputed and overwrote a cell
that failed its digest (probe 40), and a cell edited with its SHA-256 digest
recomputed was accepted (probe 41). Now each cell is sealed with an HMAC under
the writing user's results key (in the dpkit cache, never in the folder); a
failing cell is refused (exit 2, naming the file) unless ``--recompute-failed``,
which names each cell it makes again. The committed results still load (42).
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


def _edit(path, *, redigest):
    body = json.loads(path.read_text())
    body["metrics"]["balanced_accuracy"]["estimate"] = 0.99
    if redigest:
        body["digest"] = sealing.content_digest(body)   # what an editor without the key can recompute
    path.write_text(json.dumps(body))


def test_cells_are_sealed_under_a_key_outside_the_folder(cache, tmp_path):
    out = tmp_path / "cells"
    Sweep(TINY, out, FakeCells(), progress=lambda line: None).run()
    key = (cache / sealing.KEY_NAME).read_bytes()
    body = json.loads(cell_path(out, "toy", "kps", 1.0, 0).read_text())
    assert body["seal"] == sealing.seal(body, key) and body["seal"]["key_id"] == sealing.key_id(key)
    assert not list(out.glob("*.key")) and key.hex() not in "".join(p.read_text() for p in out.glob("*.json"))
    assert (cache / sealing.KEY_NAME).stat().st_mode & 0o077 == 0


def test_probe41_an_edit_with_a_recomputed_digest_is_refused(cache, tmp_path):
    out = tmp_path / "cells"
    Sweep(TINY, out, FakeCells(), progress=lambda line: None).run()
    path = cell_path(out, "toy", "kps", 1.0, 1)
    _edit(path, redigest=True)
    with pytest.raises(stored.StoredResultError, match=f"{path.name}.*seal"):
        stored.load_cells(out)
    fake = FakeCells()
    with pytest.raises(Exception, match="seal"):
        Sweep(TINY, out, fake, progress=lambda line: None).run()
    assert fake.calls == []


class _CLICells(FakeCells):
    def __init__(self, preset, model=None):
        super().__init__()


@pytest.mark.parametrize("redigest", [False, True])
def test_probe40_compare_refuses_a_failing_cell_naming_it_and_remakes_it_only_when_asked(
        cache, tmp_path, monkeypatch, capsys, redigest):
    monkeypatch.setattr(experiment_cli, "LocalCells", _CLICells)
    out = tmp_path / "cells"
    command = ["experiment", "compare", "--preset", "tiny", "--out", str(out)]
    assert main(command) == 0
    path = cell_path(out, "toy", "pp", math.inf, 0)
    _edit(path, redigest=redigest)
    capsys.readouterr()
    assert main(command) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and path.name in err and "--recompute-failed" in err
    assert json.loads(path.read_text())["metrics"]["balanced_accuracy"]["estimate"] == 0.99   # not overwritten
    assert main(command + ["--recompute-failed"]) == 0
    said = capsys.readouterr().out
    assert f"{path.name} did not verify" in said and "made again" in said
    assert json.loads(path.read_text())["metrics"]["balanced_accuracy"]["estimate"] != 0.99
    assert len(stored.load_cells(out)) == len(list(TINY.cells()))


def test_probe42_the_committed_results_still_load():
    root = stored.default_root()
    folders = [f for f in sorted(root.iterdir()) if f.is_dir() and any(f.glob("*.json"))]
    assert folders, root
    for folder in folders:
        assert stored.load_cells(folder)
