"""Run (or resume) a validated request in its run folder: one ledger, opened once, holds the release's budget.

:func:`execute` opens the release's ledger from the configuration
(:func:`dpkit.methods.budget.open_ledger`) and hands it to the run folder
(:class:`~dpkit.runs.Run`), which re-enters a resumed run's saved charges in it
(each checked against the budget) and writes every new charge to disk before
the work it pays for. The method charges its declared charges on that ledger;
``release/`` is written once, at the end.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from dpkit.methods.budget import open_ledger
from dpkit.methods.release import write_release
from dpkit.methods.request import Plan
from dpkit.runs import Run
from dpkit.runs.layout import DONE, folder_state, paths
from dpkit.seeds import root_sequence
from dpkit.validate import ParameterError


def execute(p: Plan, out) -> tuple[object, str]:
    """Run (or resume) the plan in folder ``out``; returns ``(release or None, state)``."""
    state = folder_state(out, p.params, p.seed)
    root, release_dir, private = paths(out)
    if state == DONE:
        return None, state
    start = time.perf_counter()
    existed = root.exists()
    run = Run(private, params=p.params, seed=p.seed, ledger=open_ledger(p.config))  # the one budgeted ledger
    run.note(f"{'resumed' if run.resumed else 'started'} {p.settings['method']}")
    say(f"dpkit synth {p.settings['method']}: {'resuming' if run.resumed else 'starting'} in {root}")
    try:
        if p.executor is None:
            release = p.method.synthesize(p.records, p.config, run, p.backend, root_sequence(p.seed))
        else:
            with p.executor:
                release = p.method.synthesize(p.records, p.config, run, p.backend, root_sequence(p.seed),
                                              executor=p.executor)
    except ParameterError:  # refused before its first charge (e.g. a size the public data cannot give):
        if run.discard_unspent() and not existed and not any(root.iterdir()):  # no folder is left behind
            root.rmdir()
        raise
    release = replace(release, reproducible=p.seed is not None)
    if not release_dir.exists():
        write_release(release_dir, release, p.settings)
    run.track(release_dir)          # verified whenever the folder is opened again
    seconds = time.perf_counter() - start
    timings = dict(run.manifest.get("timings", {}))
    timings[f"session_{run.manifest.get('resumes', 0)}_seconds"] = round(seconds, 3)
    run.note(f"finished in {seconds:.1f} s")
    run.finish(backend=p.backend, timings=timings)
    return release, state


def say(message: str) -> None:
    """A progress line on stderr (stdout carries the one-line summary)."""
    print(message, file=sys.stderr, flush=True)
