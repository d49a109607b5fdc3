"""Every notebook honours the book's contract and executes in its smoke setting.

The contract: stored without outputs; the first code cell is tagged ``parameters`` and
defines ``seed``, ``smoke`` and ``results_path``; run with ``smoke=True`` it finishes and
writes a JSON object of its key numbers to ``results_path``, its outputs carry no
noise a reader would see on the page (machine paths, Python warnings, progress bars), and
every figure it shows is in its outputs as an image.

The smoke runs use a kernel forked from a warm interpreter (``tests/warm_kernel.py``):
the same ipykernel, a fresh namespace, without the 3-8 s of imports a cold kernel spends
before the first cell works. ``tests/test_readme_own_data.py`` runs a notebook on the stock
kernel, as a user does, and ``make book`` runs every notebook on it.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from book_noise import find_noise, notebook_output_text

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
REQUIRED_PARAMETERS = ("seed", "smoke", "results_path")


WARM_KERNEL = Path(__file__).with_name("warm_kernel.py")


@pytest.fixture(scope="session")
def warm_kernel(tmp_path_factory):
    """The name of a kernel spec whose kernels fork from a warm server (one server per test worker)."""
    folder = tmp_path_factory.mktemp("warm-kernel")
    address = f"dpkit-warm-kernel-{os.getpid()}-{folder.name}"   # an abstract socket name (tests/warm_kernel.py)
    server = subprocess.Popen([sys.executable, str(WARM_KERNEL), "serve", address], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline().strip() == "ready"
    spec = folder / "kernels" / "dpkit-warm"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(WARM_KERNEL), "client", "-f", "{connection_file}"],
        "display_name": "Python 3 (forked from a warm interpreter)", "language": "python",
        "env": {"DPKIT_WARM_KERNEL": address}}))
    before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(folder), before) if p)
    yield "dpkit-warm"
    if before is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = before
    server.stdin.close()
    server.wait(timeout=60)


def _ids(paths):
    return [p.stem for p in paths]


def _load(path: Path):
    return nbformat.read(path, as_version=4)


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_stored_without_outputs(path):
    nb = _load(path)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_first_code_cell_is_parameters(path):
    nb = _load(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code cell"
    first = code[0]
    assert "parameters" in first.get("metadata", {}).get("tags", []), \
        f"{path.name}: first code cell is not tagged 'parameters'"
    namespace: dict = {}
    exec(compile(first.source, f"{path.name}:parameters", "exec"), namespace)
    missing = [p for p in REQUIRED_PARAMETERS if p not in namespace]
    assert not missing, f"{path.name}: parameters cell lacks {missing}"
    assert namespace["smoke"] is False and namespace["results_path"] is None


def _check_numbers(value, where):
    if isinstance(value, dict):
        for k, v in value.items():
            _check_numbers(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_numbers(v, f"{where}[{i}]")
    elif isinstance(value, float):
        assert not math.isnan(value), f"{where} is NaN"


def _privacy_keys(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if any(w in str(k).lower() for w in ("epsilon", "delta")):
                yield key, v
            yield from _privacy_keys(v, key)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_executes_in_smoke_setting(path, tmp_path, warm_kernel):
    import papermill as pm

    results = tmp_path / "results.json"
    pm.execute_notebook(
        str(path), str(tmp_path / path.name),
        parameters={"smoke": True, "seed": 1, "results_path": str(results)},
        cwd=str(path.parent), kernel_name=warm_kernel, progress_bar=False,
        execution_timeout=300,
    )
    executed = _load(tmp_path / path.name)
    noise = find_noise(notebook_output_text(executed))
    assert not noise, f"{path.name}: outputs a reader would see carry noise: {noise}"
    # every plt.show() reaches the output as an image, though this process exports MPLBACKEND=Agg
    shown = sum("plt.show()" in c.source for c in _load(path).cells if c.cell_type == "code")
    images = sum("image/png" in o.get("data", {}) for c in executed.cells if c.cell_type == "code" for o in c.outputs)
    assert images >= shown, f"{path.name}: {shown} cells show a figure, {images} images in the executed notebook"
    assert results.exists(), f"{path.name} did not write results_path"
    data = json.loads(results.read_text())
    assert isinstance(data, dict) and data, f"{path.name} wrote empty results"
    _check_numbers(data, path.stem)
    for key, value in _privacy_keys(data):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert value >= 0, f"{path.name}: {key} = {value} is negative"
