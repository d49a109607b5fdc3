"""reliability-4 X4: ``dpkit experiment compare --model <missing file>`` computed and wrote the real-data
reference cell (3 minutes) and created ``--out`` before the model path was checked.

Now a ``.gguf`` or local path that is not there is one line, exit 2, before any cell is computed or any
folder written (:func:`dpkit.models.named.check_local_model`).
"""

from __future__ import annotations

import pytest

import dpkit.experiments.cli as experiment_cli
from dpkit.cli import main
from dpkit.models.named import check_local_model
from dpkit.validate import ParameterError


@pytest.mark.parametrize("model", ["missing.gguf", "./models/missing", "/nonexistent/Model.GGUF"])
def test_x4_a_missing_model_is_refused_before_any_cell_or_folder(tmp_path, monkeypatch, capsys, model):
    def no_cells(*a, **k):
        raise AssertionError("a cell was set up before --model was checked")

    monkeypatch.setattr(experiment_cli, "LocalCells", no_cells)
    out = tmp_path / "cells"
    assert main(["experiment", "compare", "--preset", "smoke", "--model", model, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"dpkit experiment: --model={model!r} is invalid: is not an existing file") and ".gguf" in err
    assert not out.exists()


def test_names_and_existing_paths_still_resolve(tmp_path):
    assert check_local_model(None) is None and check_local_model("smollm2-135m") == "smollm2-135m"
    assert check_local_model("qwen2.5-coder-1.5b") == "qwen2.5-coder-1.5b"   # a name: its packages checked on load
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert check_local_model(str(model)) == str(model)
    hub = "HuggingFaceTB/SmolLM2-135M-Instruct"                   # a hub id, not a local path
    assert check_local_model(hub) == hub
    with pytest.raises(ParameterError, match="model='gone.gguf'"):
        check_local_model("gone.gguf", "model")
