"""Progress of long loops: a bar on a terminal or in a notebook with widgets, a line every 30 s elsewhere.

Off a terminal (under ``nohup``, in CI, in a log, in a notebook cell's subprocess)
a bar would be carriage returns in a file, so :func:`progress` writes plain lines on
stderr instead, at most one every :data:`LINE_EVERY_S` seconds and none in a stage's
first 30 s (a short run stays silent)::

    dpkit progress: kps: generating: 12/48 done, elapsed 1m 30s, estimate 4m 30s left

with the stage, done/total, the time since the stage started and an estimate of
what is left (elapsed per item done, times the items left; "unknown" before the
first item). ``DPKIT_PROGRESS`` chooses: ``1`` the bar, ``lines`` the lines, ``0``
nothing (``make book`` and the tests set ``0``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from importlib.util import find_spec
from typing import Callable, Iterable, Iterator

#: the least time between two progress lines (and from a stage's start to its first line)
LINE_EVERY_S = 30.0
#: the clock of the lines (a test replaces it)
clock: Callable[[], float] = time.monotonic
_last_line = [float("-inf")]  # when the last line was written, by any stage


def progress_mode() -> str:
    """``"bar"``, ``"lines"`` or ``"off"``: how :func:`progress` shows a long loop.

    A bar on an interactive terminal, and in a Jupyter kernel where ipywidgets is
    installed (tqdm.auto then draws a widget); nothing in a notebook kernel without
    widgets (a papermill or book build: the page stays clean); lines everywhere else:
    CI (``CI=true``), a log file, a pipe, a cell's subprocess. ``DPKIT_PROGRESS=1``,
    ``lines`` or ``0`` forces the bar, the lines or nothing.
    """
    forced = os.environ.get("DPKIT_PROGRESS")
    if forced is not None:
        forced = forced.strip().lower()
        return "bar" if forced in ("1", "true", "yes") else "lines" if forced == "lines" else "off"
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        return "lines"
    if _in_notebook_kernel():
        return "bar" if find_spec("ipywidgets") is not None else "off"
    return "bar" if bool(getattr(sys.stderr, "isatty", lambda: False)()) else "lines"


def progress_enabled() -> bool:
    """Whether :func:`progress` shows a bar (:func:`progress_mode` is ``"bar"``)."""
    return progress_mode() == "bar"


def _in_notebook_kernel() -> bool:
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"


class ProgressLines:
    """The off-terminal progress of one stage: :meth:`update` writes a line on stderr when
    :data:`LINE_EVERY_S` seconds have passed since the stage started and since the last line of any stage."""

    def __init__(self, stage: str | None, total: float | None, initial: float = 0, *,
                 unit: Callable[[float], str] = lambda n: f"{n:g}"):
        self.stage, self.total, self.initial, self.unit = stage or "working", total, initial, unit
        self.done = initial
        self.start = clock()

    def line(self, now: float) -> str:
        elapsed = now - self.start
        total = "?" if self.total is None else self.unit(self.total)
        if self.total is not None and self.done > self.initial:
            left = f"{_duration(elapsed / (self.done - self.initial) * max(0, self.total - self.done))} left"
        else:
            left = "unknown"
        return (f"dpkit progress: {self.stage}: {self.unit(self.done)}/{total} done, "
                f"elapsed {_duration(elapsed)}, estimate {left}")

    def update(self, n: float = 1) -> None:
        self.done += n
        now = clock()
        if now - max(self.start, _last_line[0]) >= LINE_EVERY_S:
            _last_line[0] = now
            print(self.line(now), file=sys.stderr, flush=True)


def _lines(iterable: Iterable, total: int | None, desc: str | None, initial: int) -> Iterator:
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    report = ProgressLines(desc, total, initial)
    for item in iterable:
        yield item
        report.update(1)


def progress(iterable: Iterable, *, total: int | None = None, desc: str | None = None,
             initial: int = 0) -> Iterable:
    """``iterable``, shown as :func:`progress_mode` says: a ``tqdm.auto`` bar, progress lines
    (:class:`ProgressLines`; ``total`` defaults to ``len(iterable)``), or the iterable itself."""
    mode = progress_mode()
    if mode == "off":
        return iterable
    if mode == "lines":
        return _lines(iterable, total, desc, initial)
    return _bar(iterable, total=total, desc=desc, initial=initial)


def _bar(iterable: Iterable | None = None, **options):
    """A ``tqdm.auto`` bar (a notebook widget in a kernel, else text). tqdm is imported here, on first use: importing
    ``tqdm.auto`` in a kernel without ipywidgets warns (``IProgress not found``) on the page."""
    from tqdm.auto import tqdm

    return tqdm(iterable, **options)


@contextlib.contextmanager
def byte_progress(total: int | None, desc: str) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n_bytes)`` for a byte-counting bar with rate and ETA (``total`` bytes, e.g. a file's
    size), or progress lines in MiB (:func:`progress_mode`); else a no-op. The bar is refreshed at most every
    1 MiB."""
    mode = progress_mode()
    if mode == "off" or not total:
        yield lambda n: None
        return
    if mode == "lines":
        report = ProgressLines(desc, total, unit=lambda n: f"{n / (1 << 20):.1f} MiB")
        yield report.update
        return
    bar = _bar(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024)
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
