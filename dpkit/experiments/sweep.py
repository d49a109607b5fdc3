"""The resumable sweep behind ``dpkit experiment compare``: one writer per folder, one sealed JSON per cell.

:class:`Sweep` runs a preset's cells (:meth:`~dpkit.experiments.presets.Preset.cells`)
through a ``run_cell`` function and writes each cell's JSON as soon as it is
made, atomically (a temporary file, flushed to disk, then renamed), with its
provenance (:mod:`dpkit.experiments.provenance`), digest and seal
(:mod:`dpkit.experiments.sealing`).

Resume: the sweep takes a lock on ``out`` (one writer; a second one is refused,
:class:`~dpkit.runs.RunInUseError`, exit 2) and skips every cell whose JSON
exists and verifies (:func:`~dpkit.experiments.cell_files.cell_problem`:
parses, names the same cell, preset and sizes, digest and seal intact). A
stored cell that fails its digest or seal is refused (exit 2, naming the file)
and made again only with ``recompute_failed`` (``--recompute-failed``), which
names each such cell; a cell written at other sizes or with another model is
made again. A crash loses at most the cell in progress; rerunning the same
command continues. With ``require_texts``, a stored method cell that lacks its
synthetic texts (written before they were kept) is made again.

Nothing written here is a differentially private release: each cell is a
seeded teaching run (its mechanisms calibrated to its epsilon, its seed fixed
and stored) and another run on the same training records, so neither a cell
nor the grid has a guarantee (see the comparison chapter). Every cell says so
in its ``note`` (:data:`~dpkit.experiments.cells.TEACHING_RUN`). It is a
measurement on public benchmark data. Each cell stores its synthetic texts and
their measures (:mod:`dpkit.textmetrics`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from dpkit.experiments.cell_files import cell_path, cell_problem, epsilon_label, json_safe, verifies
from dpkit.experiments.cells import TEACHING_RUN, package_version
from dpkit.experiments.presets import REAL, Preset
from dpkit.experiments.provenance import git_commit, machine
from dpkit.experiments.sealing import content_digest, register_sealed, results_key, seal, sealed_here
from dpkit.runs import lock
from dpkit.validate import ParameterError


@dataclass
class Sweep:
    """One writer of ``out``: holds its lock while the cells run (see the module docstring)."""

    preset: Preset
    out: Path
    run_cell: Callable[[str, str, float, int], dict]  # -> {"metrics", "release", "wall_s", "runtime", "model"}
    progress: Callable[[str], None] = print
    written: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    only: tuple = ()  # a slice: run only these cells of the preset (empty: every cell)
    model: str | None = None  # the model the cells are made with: a stored cell of another model is made again
    require_texts: bool = False  # a stored method cell without its texts (older code) is made again
    recompute_failed: bool = False  # a stored cell that fails its digest or seal: refused (False) or made again

    def run(self) -> "Sweep":
        self.out = Path(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        lock.acquire(self.out, self)  # RunInUseError (exit 2) while another process writes this folder
        try:
            commit, version = git_commit(), package_version("dpkit")
            cells = [c for c in self.preset.cells() if not self.only or c in self.only]
            key = results_key(create=True)
            sealed = sealed_here(self.out, key)
            problems = {c: cell_problem(cell_path(self.out, *c), self.preset, *c, self.model, key,
                                        sealed=sealed) for c in cells}
            failed = {c: why for c, (kind, why) in ((c, p) for c, p in problems.items() if p) if kind == "integrity"}
            if failed and not self.recompute_failed:
                first, why = next(iter(failed.items()))
                raise ParameterError("stored cell", cell_path(self.out, *first).name,
                                     f"in {self.out} does not verify: {why}" + (f" ({len(failed) - 1} more cells fail too)"
                                                                  if len(failed) > 1 else "")
                                     + ". It is not made again silently: inspect it, or rerun with "
                                       "--recompute-failed to make every failing cell again")
            for c, why in failed.items():
                self.progress(f"{cell_path(self.out, *c).name} did not verify ({why}): made again "
                              "(--recompute-failed)")
            pending = [c for c in cells if problems[c] is not None
                       or (self.require_texts and c[1] != REAL and not _has_texts(cell_path(self.out, *c)))]
            sweep_start, seconds_by_method = time.perf_counter(), {}
            for i, (dataset, method, epsilon, seed) in enumerate(cells, 1):
                path = cell_path(self.out, dataset, method, epsilon, seed)
                if (dataset, method, epsilon, seed) not in pending:
                    self.skipped.append(path)
                    continue
                start = time.perf_counter()
                result = self.run_cell(dataset, method, epsilon, seed)
                body = {"cell": {"dataset": dataset, "method": method, "epsilon": epsilon_label(epsilon), "seed": seed},
                        "preset": self.preset.name, "sizes": self.preset.public_sizes(),
                        "note": TEACHING_RUN, "metrics": result["metrics"], "release": result.get("release", {}),
                        **{key: result[key] for key in ("text_measures", "texts") if key in result},
                        "wall_s": {"release": result["wall_s"], "cell": time.perf_counter() - start},
                        "provenance": {"git_commit": commit, "machine": machine(), "runtime": result["runtime"],
                                       "model": result["model"], "dpkit_version": version,
                                       "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
                body = json_safe(body)
                body["digest"] = content_digest(body)
                body["seal"] = seal(body, key)
                _write_atomic(path, body)
                register_sealed(path, key)
                self.written.append(path)
                seconds_by_method.setdefault(method, []).append(body["wall_s"]["cell"])
                left = [c[1] for c in pending[pending.index((dataset, method, epsilon, seed)) + 1:]]
                score = body["metrics"].get("balanced_accuracy", {})
                self.progress(f"[{i}/{len(cells)}] {dataset} {method} epsilon {epsilon_label(epsilon)} seed {seed}: "
                              f"balanced accuracy {score.get('estimate', float('nan')):.3f} "
                              f"(release {body['wall_s']['release']:.0f} s; "
                              f"{eta(time.perf_counter() - sweep_start, seconds_by_method, left)})")
        finally:
            lock.release(self.out, self)
        return self


def _has_texts(path: Path) -> bool:
    """Whether the stored cell at ``path`` holds its synthetic texts."""
    try:
        return isinstance(json.loads(Path(path).read_text()).get("texts"), dict)
    except (OSError, ValueError, AttributeError):
        return False


def eta(elapsed_s: float, seconds_by_method: dict[str, list[float]], methods_left: Sequence[str]) -> str:
    """Elapsed time and an estimate of the rest from the cells run so far in this process.

    Each cell left is priced at the mean time of this process's cells of its method
    (private prediction's cells take minutes, DP-ST's seconds); a method not run yet
    at the mean of all cells run so far.
    """
    if not methods_left:
        return f"{elapsed_s / 60:.0f} min elapsed, done"
    every = [t for times in seconds_by_method.values() for t in times]
    overall = sum(every) / len(every) if every else 0.0
    rest = sum(sum(seconds_by_method[m]) / len(seconds_by_method[m]) if seconds_by_method.get(m) else overall
               for m in methods_left)
    return f"{elapsed_s / 60:.0f} min elapsed, about {rest / 60:.0f} min left"


def _write_atomic(path: Path, body: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as handle:
        handle.write(json.dumps(body, indent=1, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def cells_done(out: Path, preset: Preset) -> Sequence[Path]:
    """The cell files of ``preset`` in ``out`` that verify."""
    return [cell_path(out, *c) for c in preset.cells() if verifies(cell_path(out, *c), preset, *c)]
