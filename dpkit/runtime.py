"""Process-wide settings: offline hubs, thread counts, matplotlib's backend, cache folders, results files.

Call :func:`setup` at the top of a notebook or script. It never touches the
network: the Hugging Face hub is switched to offline mode before any model
library is imported, so a missing file fails loudly instead of downloading.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.abc
import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from dpkit.io import atomic_write_text, to_jsonable

_RELEASE_MODE = contextvars.ContextVar("dpkit_release_mode", default=False)


@contextlib.contextmanager
def release_mode(active: bool = True):
    """Within this block (when ``active``), the process makes a release: no seed is written anywhere that
    outlives it (the response cache of :mod:`dpkit.backends.cache` then caches no sampled request)."""
    token = _RELEASE_MODE.set(bool(active) or _RELEASE_MODE.get())
    try:
        yield
    finally:
        _RELEASE_MODE.reset(token)


def in_release_mode() -> bool:
    """Whether the current context is a release (see :func:`release_mode`)."""
    return _RELEASE_MODE.get()


OFFLINE_VARIABLES = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


QUIET_VARIABLES = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}


def set_offline() -> None:
    """Force the Hugging Face libraries offline, and quiet (idempotent)."""
    for key, value in OFFLINE_VARIABLES.items():
        os.environ.setdefault(key, value)
    quiet_model_libraries()


def import_transformers():
    """The ``transformers`` package: dpkit's one import of it (seconds of CPU; ``dpkit --help`` never makes it).

    The first import comes after :func:`set_offline`: huggingface_hub reads ``HF_HUB_OFFLINE`` once, when it
    is imported, so a module-level import of transformers anywhere in dpkit could go online.
    """
    if "transformers" not in sys.modules:
        set_offline()
    import transformers

    return transformers


def quiet_model_libraries() -> None:
    """No load-progress bars, advisory logs or widget warnings from the model libraries.

    Loading a 135M model takes a second; its "Loading weights" bar and tqdm's
    "IProgress not found" warning (raised when a notebook kernel lacks ipywidgets,
    and printing a machine path) are noise on a book page. Our own long loops show
    progress through :func:`dpkit.runs.progress`. Idempotent; the environment
    variables can be set beforehand to override.
    """
    for key, value in QUIET_VARIABLES.items():
        os.environ.setdefault(key, value)
    warnings.filterwarnings("ignore", message="IProgress not found")
    if "huggingface_hub" in sys.modules and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1":
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules and os.environ["TRANSFORMERS_VERBOSITY"] == "error":
        transformers_logging = import_transformers().utils.logging
        transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity_error()


def default_threads() -> int:
    """Threads for torch: the cores this process may use, at most 8, at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        cores = os.cpu_count() or 1
    return max(1, min(8, cores))


class _TorchThreadsOnImport(importlib.abc.MetaPathFinder):
    """Sets torch's intra-op threads the moment torch is imported (at most one in ``sys.meta_path``).

    A process that never uses torch (a notebook on the DP mechanisms alone) then never loads it:
    importing torch costs ~2.5 CPU-s.
    """

    def __init__(self, threads: int):
        self.threads = threads

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # one import of torch per process: find the real module without this finder
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            exec_module, threads = spec.loader.exec_module, self.threads

            def exec_and_set_threads(module):
                exec_module(module)
                module.set_num_threads(threads)

            spec.loader.exec_module = exec_and_set_threads
        return spec


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads (``DPKIT_THREADS`` overrides); return the count used.

    If torch is not imported yet, the count is applied when it is (see :class:`_TorchThreadsOnImport`).
    """
    n = int(os.environ.get("DPKIT_THREADS", n or default_threads()))
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _TorchThreadsOnImport)]
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    else:
        sys.meta_path.insert(0, _TorchThreadsOnImport(n))
    return n


def cache_dir() -> Path:
    """Where derived model files live (``DPKIT_CACHE``, else ``~/.cache/dpkit``)."""
    root = os.environ.get("DPKIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dpkit")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
"""matplotlib's backend inside a Jupyter kernel: ``plt.show()`` puts a PNG into the cell's output."""


def in_notebook_kernel() -> bool:
    """True inside a Jupyter kernel (JupyterLab, papermill, a book build), False in scripts and tests."""
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def choose_matplotlib_backend(in_kernel: bool, requested: str | None) -> str:
    """The matplotlib backend for this environment.

    In a kernel the inline backend, so that figures reach the page; a non-interactive
    ``Agg`` inherited from the environment (a Makefile, a test runner) is overridden there,
    because under it ``plt.show()`` draws nothing. Another requested backend (``widget``,
    ``svg``...) is kept. Outside a kernel the requested backend, else ``Agg``.
    """
    requested = (requested or "").strip()
    if in_kernel:
        return INLINE_BACKEND if requested.lower() in ("", "agg") else requested
    return requested or "Agg"


def set_matplotlib_backend() -> str:
    """Apply :func:`choose_matplotlib_backend` to this process; return the backend chosen.

    In a kernel the inline backend is switched on with IPython's ``%matplotlib inline``
    (which also works when pyplot was imported before under ``Agg``).
    """
    in_kernel = in_notebook_kernel()
    backend = choose_matplotlib_backend(in_kernel, os.environ.get("MPLBACKEND"))
    os.environ["MPLBACKEND"] = backend
    if in_kernel and backend == INLINE_BACKEND:
        import IPython

        IPython.get_ipython().run_line_magic("matplotlib", "inline")
    return backend


def setup(threads: int | None = None) -> dict[str, Any]:
    """Offline and quiet model libraries, thread count, matplotlib's backend; returns what was set.

    The backend is inline in a Jupyter kernel (figures appear on the page) and ``Agg`` in
    scripts and tests (see :func:`choose_matplotlib_backend`).
    """
    set_offline()
    backend = set_matplotlib_backend()
    used = set_threads(threads)
    return {"threads": used, "offline": True, "matplotlib_backend": backend}


def write_results(results_path: str | os.PathLike | None, results: Mapping[str, Any]) -> dict:
    """Write a notebook's key numbers as JSON to ``results_path`` (no-op when ``None``/empty).

    Contract of every notebook: each epsilon/delta it claims appears under a key
    containing "epsilon"/"delta", and every reported metric appears too.
    """
    payload = to_jsonable(dict(results), nonfinite="string")
    if results_path:
        atomic_write_text(results_path, json.dumps(payload, indent=2, sort_keys=True))
    return payload


GLUE_MIME_PREFIX = "application/papermill.record/"
"""Prefix of a glued value's mime types: myst-nb reads such an output as glue data and displays nothing."""


def glue(**values: Any) -> dict[str, Any]:
    """Make a chapter's computed numbers available to its prose (myst-nb ``glue``), not displayed.

    The prose then writes ``{glue:text}`name:.3f``` and always shows what the page
    computed. numpy scalars are stored as plain Python numbers so that format
    specifications apply. Outside IPython nothing is glued. Returns the plain values.

    Each value becomes the display output that ``myst_nb.glue(name, value, display=False)``
    makes: the value's mime bundle with every type prefixed by :data:`GLUE_MIME_PREFIX`, and
    ``{"scrapbook": {"name": ..., "mime_prefix": ...}}`` in its metadata (what myst-nb's
    ``extract_glue_data`` reads; ``tests/test_runtime_glue.py`` checks the two agree). It is
    written here because importing myst-nb's glue imports nbformat and, through jsonschema's
    format checker, compiles a grammar: ~2 CPU-s in every notebook kernel.
    """
    plain = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in values.items()}
    try:
        from IPython.core.formatters import format_display_data
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython is not installed
        return plain
    for name, value in plain.items():
        bundle, metadata = format_display_data(value)
        metadata["scrapbook"] = {"name": name, "mime_prefix": GLUE_MIME_PREFIX}
        display({GLUE_MIME_PREFIX + mime: data for mime, data in bundle.items()}, raw=True, metadata=metadata)
    return plain
