"""Progress everywhere (issue 49): off a terminal, a line at most every 30 s on stderr; on a terminal, the bar.

Before: off a terminal (``nohup``, CI, a notebook cell's subprocess) :func:`dpkit.runs.progress` showed
nothing, so ``dpkit synth`` printed "starting in DIR" and then nothing for ten minutes and more. The clock
here is fake: each item of a loop "takes" a set number of seconds.
"""

from __future__ import annotations

import io
import re
import sys

import pytest

from dpkit.runs import Run, progress_bars

LINE = re.compile(r"^dpkit progress: (?P<stage>.+): (?P<done>\d+)/(?P<total>\d+) done, "
                  r"elapsed (?P<elapsed>\d+(?:m \d\ds|s|h \d\dm)), estimate (?P<left>.+ left|unknown)$")


class Terminal(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class _Err:
    def __init__(self, capsys):
        self.capsys, self.seen = capsys, ""

    def getvalue(self) -> str:
        self.seen += self.capsys.readouterr().err
        return self.seen


@pytest.fixture
def fake(monkeypatch, capsys):
    """stderr off a terminal (pytest's capture), no CI and no DPKIT_PROGRESS, and a clock each item of the
    loop advances."""
    monkeypatch.delenv("DPKIT_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(progress_bars, "_in_notebook_kernel", lambda: False)
    monkeypatch.setattr(progress_bars, "_last_line", [float("-inf")])
    now = [1000.0]
    monkeypatch.setattr(progress_bars, "clock", lambda: now[0])
    return now, _Err(capsys)


def _walk(iterable, now, seconds_per_item):
    out = []
    for item in iterable:
        now[0] += seconds_per_item
        out.append(item)
    return out


def test_off_a_terminal_a_line_every_30_s_with_stage_done_total_elapsed_and_estimate(fake):
    now, err = fake
    assert progress_bars.progress_mode() == "lines"
    assert _walk(progress_bars.progress(range(20), desc="kps: generating"), now, 7.0) == list(range(20))
    lines = err.getvalue().splitlines()
    matches = [LINE.match(line) for line in lines]
    assert lines and all(matches), lines
    assert [m["stage"] for m in matches] == ["kps: generating"] * len(lines)
    assert [int(m["done"]) for m in matches] == [5, 10, 15, 20]  # 35 s, 70 s, 105 s, 140 s: >= 30 s apart
    assert {m["total"] for m in matches} == {"20"}
    assert matches[0]["elapsed"] == "35s" and matches[0]["left"] == "1m 45s left"   # 15 items at 7 s
    assert matches[-1]["elapsed"] == "2m 20s" and matches[-1]["left"] == "0s left"


def test_a_fast_loop_writes_nothing_and_lines_are_rate_limited_across_stages(fake):
    now, err = fake
    _walk(progress_bars.progress(range(100), desc="fast"), now, 0.2)       # 20 s in all: silent
    assert err.getvalue() == ""
    _walk(progress_bars.progress(range(10), desc="first"), now, 31.0)      # a line after every item
    _walk(progress_bars.progress(range(10), desc="second"), now, 1.0)
    _walk(progress_bars.progress(range(40), desc="third"), now, 1.0)
    for line in err.getvalue().splitlines():
        assert LINE.match(line), line
    # "first" writes at each of its 10 items; "second" (10 s) none; "third" once 30 s have passed
    stages = [LINE.match(line)["stage"] for line in err.getvalue().splitlines()]
    assert stages == ["first"] * 10 + ["third"]


def test_the_interval_between_two_lines_is_never_below_30_s(fake, monkeypatch):
    now, err = fake
    written = []
    monkeypatch.setattr(progress_bars, "print", lambda *a, **k: written.append(now[0]), raising=False)
    for seconds in (0.5, 3.0, 11.0, 29.9, 30.0, 45.0):
        _walk(progress_bars.progress(range(30), desc="s"), now, seconds)
    assert len(written) > 10
    assert min(b - a for a, b in zip(written, written[1:])) >= progress_bars.LINE_EVERY_S


def test_a_run_folders_pending_records_report_off_a_terminal(fake, tmp_path):
    """The loop every ``dpkit synth`` method writes its records through (:meth:`Run.pending`)."""
    now, err = fake
    run = Run(tmp_path / "run", params={"x": 1}, fsync=False)
    for key, item in run.pending({f"r{i}": i for i in range(6)}, desc="dpst: reconstructing"):
        now[0] += 20.0
        run.append(key, {"v": item})
    line = err.getvalue().splitlines()[0]
    assert LINE.match(line)["stage"] == "dpst: reconstructing" and LINE.match(line)["total"] == "6"


def test_bytes_off_a_terminal_in_mib(fake):
    now, err = fake
    with progress_bars.byte_progress(64 << 20, "reading the input") as advance:
        for _ in range(8):
            now[0] += 10.0
            advance(8 << 20)
    line = err.getvalue().splitlines()[0]
    assert line.startswith("dpkit progress: reading the input: 24.0 MiB/64.0 MiB done, elapsed 30s, estimate ")


def test_on_a_terminal_the_bar_and_forced_modes(fake, monkeypatch):
    from tqdm.auto import tqdm

    now, err = fake
    assert progress_bars.progress_mode() == "lines"
    with monkeypatch.context() as m:
        m.setattr(sys, "stderr", Terminal(tty=True))
        bar = progress_bars.progress(range(3), total=3, desc="x")
        assert isinstance(bar, tqdm) and list(bar) == [0, 1, 2]
        bar.close()
    monkeypatch.setenv("CI", "true")
    assert progress_bars.progress_mode() == "lines" and not progress_bars.progress_enabled()
    monkeypatch.setenv("DPKIT_PROGRESS", "0")
    items = [1, 2]
    assert progress_bars.progress(items) is items and progress_bars.progress_mode() == "off"
    monkeypatch.setenv("DPKIT_PROGRESS", "lines")
    assert progress_bars.progress_mode() == "lines"
    monkeypatch.setenv("DPKIT_PROGRESS", "1")
    assert progress_bars.progress_mode() == "bar"
