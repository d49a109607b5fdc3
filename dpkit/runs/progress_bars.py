"""Progress bars for long loops: shown on a terminal or a notebook with widgets, never in logs or CI."""

from __future__ import annotations

import contextlib
import os
import sys
from importlib.util import find_spec
from typing import Callable, Iterable, Iterator


def progress_enabled() -> bool:
    """Whether :func:`progress` shows a bar.

    On an interactive terminal, and in a Jupyter kernel where ipywidgets is
    installed (tqdm.auto then draws a widget); never in CI (``CI=true``), in logs,
    or in a notebook kernel without widgets (a papermill or book build: the page
    stays clean). ``DPKIT_PROGRESS=1``/``0`` forces them on/off; ``make book``
    sets ``0``.
    """
    forced = os.environ.get("DPKIT_PROGRESS")
    if forced is not None:
        return forced.strip().lower() in ("1", "true", "yes")
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        return False
    if _in_notebook_kernel():
        return find_spec("ipywidgets") is not None
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _in_notebook_kernel() -> bool:
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress(iterable: Iterable, *, total: int | None = None, desc: str | None = None,
             initial: int = 0) -> Iterable:
    """A ``tqdm.auto`` bar around ``iterable`` when :func:`progress_enabled`, else the iterable itself."""
    if not progress_enabled():
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, initial=initial)


@contextlib.contextmanager
def byte_progress(total: int | None, desc: str) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n_bytes)`` for a byte-counting bar with rate and ETA (``total`` bytes, e.g. a file's
    size) when :func:`progress_enabled`; else a no-op. The bar is refreshed at most every 1 MiB."""
    if not progress_enabled() or not total:
        yield lambda n: None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024)
    pending = [0]

    def advance(n: int) -> None:
        pending[0] += n
        if pending[0] >= 1 << 20:
            bar.update(pending[0])
            pending[0] = 0

    try:
        yield advance
        bar.update(pending[0])
    finally:
        bar.close()
