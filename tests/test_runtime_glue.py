"""``runtime.glue`` writes the outputs that myst-nb's ``glue`` writes, without importing myst-nb.

The book's ``{glue:text}`` roles resolve only if myst-nb recognises each glued output, so the
outputs are compared call for call with ``myst_nb.glue(name, value, display=False)`` and read
back with myst-nb's own ``extract_glue_data_cell``. A fresh interpreter checks the saving: a
kernel that glues loads neither myst-nb nor nbformat (whose schema checker compiles a grammar).
"""

from __future__ import annotations

import subprocess
import sys

import IPython.display
import nbformat
import numpy as np
from myst_nb.ext import glue as myst_glue_module

from dpkit import runtime

VALUES = {"epsilon": np.float64(1.25), "rows": np.int64(7), "name": "health_tweets", "ratio": 0.125}


def _recorder(calls: list):
    return lambda *objs, **kwargs: calls.append((objs, kwargs))


def test_glue_displays_what_myst_nb_glue_displays(monkeypatch):
    ours: list = []
    monkeypatch.setattr(IPython.display, "display", _recorder(ours))
    plain = runtime.glue(**VALUES)
    theirs: list = []
    monkeypatch.setattr(myst_glue_module, "ipy_display", _recorder(theirs))
    for name, value in plain.items():
        myst_glue_module.glue(name, value, display=False)
    assert plain == {"epsilon": 1.25, "rows": 7, "name": "health_tweets", "ratio": 0.125}
    assert type(plain["epsilon"]) is float and type(plain["rows"]) is int
    assert len(ours) == len(VALUES) and ours == theirs


def test_myst_nb_reads_every_glued_value_back(monkeypatch):
    outputs: list = []

    def as_output(*objs, raw=False, metadata=None, **kwargs):
        assert raw and len(objs) == 1
        outputs.append({"output_type": "display_data", "data": objs[0], "metadata": metadata})

    monkeypatch.setattr(IPython.display, "display", as_output)
    runtime.glue(**VALUES)
    cell = nbformat.from_dict({"cell_type": "code", "source": "", "metadata": {}, "execution_count": 1,
                               "outputs": outputs})
    found = dict(myst_glue_module.extract_glue_data_cell(cell))
    assert set(found) == set(VALUES)
    assert found["epsilon"]["data"]["text/plain"] == "1.25"
    assert found["name"]["data"]["text/plain"] == "'health_tweets'"
    assert not cell.outputs, "a glued value must not be displayed on the page"


def test_gluing_imports_neither_myst_nb_nor_nbformat():
    code = ("import sys; from dpkit import runtime; runtime.glue(x=1.5); "
            "print(sorted({'myst_nb', 'nbformat', 'jsonschema'} & set(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr.strip().splitlines()[-1] == "[]", done.stderr
