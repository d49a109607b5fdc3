"""Stored comparison results: load and check the cells ``dpkit experiment compare`` wrote, summarize
them over seeds, and re-run a slice of them to see that they reproduce.

:func:`load_cells` reads every ``*.json`` of a preset's folder and refuses the
folder (:class:`StoredResultError`, naming the file and the reason) when a file
does not verify: content that does not match its SHA-256 digest, a cell sealed
under this user's results key whose seal does not match (an edit that
recomputed the digest), a cell this user sealed that lost its seal (removed, or its key id
changed; the cache records which cells each key sealed), a cell written at other sizes than its preset's,
missing provenance. Cells sealed elsewhere (the committed results) are checked
by their digest only (see :mod:`dpkit.experiments.sealing`). A chapter therefore never
plots a row that was edited by hand or written by other code.

:func:`rerun_slice` runs some stored cells again through the same code path as
the command (:class:`~dpkit.experiments.sweep.Sweep` with
:class:`~dpkit.experiments.cells.LocalCells`) into a scratch folder, and
:func:`disagreements` compares each re-run with its stored row: a metric
agrees when the re-run's estimate lies inside the stored cell's 95% bootstrap
interval (a seeded re-run on the same machine reproduces it exactly or nearly).

:func:`paired_difference` compares two epsilons of one method seed by seed (the
same seed's cells at both, so the shared randomness cancels) with a Student-t
interval over the paired differences: "rises with epsilon" is a claim only when
that interval lies above 0. :func:`first_texts` shows the first texts of each
stored cell (a public rule, not a pick).

Cells stored before the texts were kept load as before; their rows say
``has_texts`` False and their text measures are nan.

Everything here is evaluation on public benchmark data, never a release.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Sequence

import pandas as pd

from dpkit.experiments.cells import LocalCells
from dpkit.experiments.compare import metric_interval, t_interval
from dpkit.experiments.cell_files import cell_path, cell_problem
from dpkit.experiments.presets import PRESETS, REAL, Preset
from dpkit.experiments.provenance import PROVENANCE_KEYS
from dpkit.experiments.sealing import results_key, sealed_here
from dpkit.experiments.sweep import Sweep

#: presets from the largest to the smallest: a chapter plots the first one that has stored cells
PRESET_ORDER = ("full", "medium", "paired-small", "book", "smoke")
#: the text measures a row carries (nan for a cell stored without them)
ROW_TEXT_MEASURES = ("assistant_talk", "short_texts", "distinct_1", "distinct_2", "words_mean", "length_ks",
                     "knn_precision", "knn_recall", "auroc_real_vs_synthetic")
#: the metrics a re-run is compared on
CHECKED_METRICS = ("balanced_accuracy", "macro_f1")


class StoredResultError(ValueError):
    """A stored cell that does not verify (the message names the file and the reason)."""


def default_root() -> Path:
    """``results/compare`` of the source tree dpkit is imported from, else of the working folder or its parent."""
    for base in (Path(__file__).resolve().parents[2], Path.cwd(), Path.cwd().parent):
        if (base / "results" / "compare").is_dir():
            return base / "results" / "compare"
    return Path("results") / "compare"


def largest_stored_preset(root: Path | None = None) -> str:
    """The name of the largest preset (:data:`PRESET_ORDER`) with at least one stored cell under ``root``."""
    root = Path(root) if root is not None else default_root()
    for name in PRESET_ORDER:
        if any((root / name).glob("*.json")):
            return name
    raise StoredResultError(f"no stored comparison cells under results/compare ({', '.join(PRESET_ORDER)}); "
                            "run `dpkit experiment compare --preset smoke` first")


def cell_key(body: dict) -> tuple[str, str, float, int]:
    """``(dataset, method, epsilon, seed)`` of a stored cell, epsilon a float (``math.inf`` for infinity)."""
    cell = body["cell"]
    epsilon = math.inf if cell["epsilon"] == "inf" else float(cell["epsilon"])
    return cell["dataset"], cell["method"], epsilon, int(cell["seed"])


def load_cells(folder: Path) -> list[dict]:
    """Every stored cell of ``folder``, each checked (see the module docstring); sorted by file name."""
    folder = Path(folder)
    files = sorted(folder.glob("*.json"))
    if not files:
        raise StoredResultError(f"{folder.name}: holds no stored cell")
    cells, key = [], results_key()
    sealed = sealed_here(folder, key)
    for path in files:
        try:
            body = json.loads(path.read_text())
            preset = PRESETS[body["preset"]]
            cell = cell_key(body)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise StoredResultError(f"{path.name}: not a stored comparison cell ({type(error).__name__})") from None
        missing = [key for key in PROVENANCE_KEYS if key not in body.get("provenance", {})]
        if missing:
            raise StoredResultError(f"{path.name}: provenance lacks {missing}")
        if cell_path(folder, *cell).name != path.name:
            raise StoredResultError(f"{path.name}: names another cell than its file")
        problem = cell_problem(path, preset, *cell, key=key, sealed=sealed)
        if problem is not None:
            raise StoredResultError(f"{path.name}: does not verify ({problem[1]}; the {preset.name} preset)")
        cells.append(body)
    return cells


def split_epsilon(epsilon: float, read_per_label: int, pool_per_label: int) -> float:
    """An upper bound on the epsilon part of a private-prediction cell with respect to its TRAINING SPLIT.

    The cell decodes a fixed-size uniform subsample of ``read_per_label`` of the
    ``pool_per_label`` training records of each label (drawn with the cell's
    public seed). Under add/remove on the split, one added record of a label
    displaces a member of that label's subsample with probability
    ``p = read_per_label / (pool_per_label + 1)``, which is a replace-one change
    (two add/remove steps, ``2 * epsilon``) of what the release reads; otherwise
    the subsample is unchanged. Hence ``log(1 + p * (exp(2 * epsilon) - 1))``
    (subsampling without replacement under replacement). The stored ``full``
    preset reads 400 of 1000 per label: 1.27 at epsilon 1, 7.08 at epsilon 4.
    Only the epsilon part: the cell's delta is not carried over here. And a cell
    is a seeded teaching run, not a release: the bound says what a release made
    this way (with a fresh draw) would be charged against the split, not what a
    seeded cell guarantees.
    """
    if not 0 < read_per_label <= pool_per_label:
        raise ValueError(f"read_per_label={read_per_label} must lie in [1, pool_per_label={pool_per_label}]")
    p = read_per_label / (pool_per_label + 1)
    return float(math.log1p(p * math.expm1(2.0 * epsilon)))


def records_read(body: dict) -> int:
    """Private records the cell's release read (cells written before it was recorded: DP-ST reads one record
    per output, every other method the whole split)."""
    release = body["release"]
    if "n_records_read" in release:
        return int(release["n_records_read"])
    if body["cell"]["method"] == "dpst":
        return int(release["n_texts"])
    return int(body["metrics"]["n_private_records"])


def rows(cells: Sequence[dict]):
    """One row per stored cell: the cell, each metric with its bootstrap interval, wall time, provenance."""
    out = []
    for body in cells:
        dataset, method, epsilon, seed = cell_key(body)
        metrics = body["metrics"]
        row = {"dataset": dataset, "method": method, "epsilon": epsilon, "seed": seed,
               "majority_baseline": metrics["majority_baseline"], "n_train": metrics["n_train"],
               "n_test": metrics["n_test"], "n_private_records": metrics["n_private_records"],
               "n_records_read": records_read(body),
               "wall_s": body["wall_s"]["release"], "shared_decoding": "decoding_shared_with_epsilon" in body["release"],
               "runtime_private_prediction": body["provenance"]["runtime"].get("private_prediction"),
               "runtime_generation": body["provenance"]["runtime"].get("generation"),
               "git_commit": body["provenance"]["git_commit"], "created": body["provenance"]["created"]}
        for metric in ("balanced_accuracy", "macro_f1", "accuracy"):
            for part in ("estimate", "low", "high"):
                row[metric if part == "estimate" else f"{metric}_{part}"] = metrics[metric][part]
        measures = body.get("text_measures") or {}
        row.update({name: float(measures.get(name, math.nan)) for name in ROW_TEXT_MEASURES})
        row["has_texts"] = texts_of(body) is not None
        out.append(row)
    return pd.DataFrame(out)


def texts_of(body: dict) -> tuple[list[str], list[str]] | None:
    """``(texts, labels)`` stored in a cell; None for the real cell and for cells stored before texts were kept."""
    stored = body.get("texts")
    if not isinstance(stored, dict):
        return None
    return list(stored["texts"]), list(stored["labels"])


def first_texts(cells: Sequence[dict], n: int = 3):
    """The first ``n`` stored texts of each label of each cell that holds texts (a public rule: no pick).

    One row per text: dataset, method, epsilon, seed, label, index (its place in the
    release), text.
    """
    out = []
    for body in cells:
        stored = texts_of(body)
        if stored is None:
            continue
        dataset, method, epsilon, seed = cell_key(body)
        taken: dict[str, int] = {}
        for index, (text, label) in enumerate(zip(*stored)):
            if taken.get(label, 0) < n:
                taken[label] = taken.get(label, 0) + 1
                out.append({"dataset": dataset, "method": method, "epsilon": epsilon, "seed": seed, "label": label,
                            "index": index, "text": text})
    return pd.DataFrame(out, columns=["dataset", "method", "epsilon", "seed", "label", "index", "text"])


def paired_difference(frame, dataset: str, method: str, low_epsilon: float, high_epsilon: float,
                      column: str = "balanced_accuracy") -> dict:
    """Mean of ``column`` at ``high_epsilon`` minus at ``low_epsilon``, paired by seed, with a 95% t interval.

    Only seeds stored at both epsilons count (``seeds``). ``rises`` is True when the
    whole interval lies above 0, ``falls`` when it lies below; with one pair the
    interval has no width and neither is claimed.
    """
    part = frame[(frame["dataset"] == dataset) & (frame["method"] == method)]
    low = part[part["epsilon"] == low_epsilon].set_index("seed")[column]
    high = part[part["epsilon"] == high_epsilon].set_index("seed")[column]
    seeds = sorted(set(low.index) & set(high.index))
    differences = [float(high[s] - low[s]) for s in seeds]
    mean, lo, hi = t_interval(differences)
    enough = len(seeds) >= 2
    return {"dataset": dataset, "method": method, "low_epsilon": low_epsilon, "high_epsilon": high_epsilon,
            "column": column, "seeds": seeds, "differences": differences, "mean": mean, "low": lo, "high": hi,
            "rises": bool(enough and lo > 0), "falls": bool(enough and hi < 0)}


def summarize(frame, columns: Sequence[str] = ("balanced_accuracy", "macro_f1", "wall_s")):
    """Means over seeds with 95% Student-t intervals, one row per (dataset, method, epsilon).

    Intervals of scores are clipped to [0, 1] (:func:`~dpkit.experiments.compare.metric_interval`).

    Each data set also gets a ``majority class`` row (epsilon infinity) from the
    majority baseline of its ``real`` cells.
    """
    out = []
    for (dataset, method, epsilon), part in frame.groupby(["dataset", "method", "epsilon"], sort=True):
        row = {"dataset": dataset, "method": method, "epsilon": epsilon, "seeds": len(part)}
        for column in columns:
            interval = metric_interval(column, part[column].tolist())
            row[column], row[column + "_low"], row[column + "_high"] = interval
        out.append(row)
        if method == REAL:
            mean, low, high = t_interval(part["majority_baseline"].tolist())
            out.append({"dataset": dataset, "method": "majority class", "epsilon": math.inf, "seeds": len(part),
                        "balanced_accuracy": mean, "balanced_accuracy_low": low, "balanced_accuracy_high": high})
    return pd.DataFrame(out)


def provenance(cells: Sequence[dict]) -> dict:
    """What the stored cells say about where they came from (each distinct value once)."""
    def distinct(values):
        return sorted({json.dumps(v, sort_keys=True) if isinstance(v, dict) else str(v) for v in values})

    prov = [body["provenance"] for body in cells]
    return {"presets": distinct(body["preset"] for body in cells),
            "git_commits": distinct(p["git_commit"] for p in prov),
            "machines": distinct(p["machine"] for p in prov),
            "runtimes": distinct(p["runtime"] for p in prov),
            "models": distinct(p["model"] for p in prov),
            "created": [min(p["created"] for p in prov), max(p["created"] for p in prov)],
            "sizes": cells[0]["sizes"]}


def rerun_slice(preset: Preset, chosen: Sequence[tuple[str, str, float, int]], *, run_cell=None,
                out: Path | None = None) -> dict:
    """Re-run the cells ``chosen`` of ``preset`` as ``dpkit experiment compare`` runs them.

    ``run_cell`` defaults to :class:`~dpkit.experiments.cells.LocalCells` of the
    preset; the JSON files go to ``out`` (a fresh scratch folder by default).
    Returns ``{cell: body}``.
    """
    if run_cell is None:
        run_cell = LocalCells(preset)
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="dpkit-slice-"))
    Sweep(preset, out, run_cell, progress=lambda line: None, only=tuple(chosen)).run()
    return {cell: json.loads(cell_path(out, *cell).read_text()) for cell in chosen}


def disagreements(stored: dict, rerun: dict, metrics: Sequence[str] = CHECKED_METRICS) -> list[str]:
    """Each metric of the re-run ``rerun`` outside the stored cell's 95% interval, as one line."""
    problems = []
    name = "{dataset} {method} epsilon {epsilon} seed {seed}".format(**stored["cell"])
    if stored["cell"] != rerun["cell"]:
        return [f"{name}: the re-run is another cell ({rerun['cell']})"]
    for metric in metrics:
        kept, again = stored["metrics"][metric], rerun["metrics"][metric]["estimate"]
        if not kept["low"] - 1e-9 <= again <= kept["high"] + 1e-9:
            problems.append(f"{name}: {metric} re-ran to {again:.3f}, outside the stored "
                            f"{kept['estimate']:.3f} [{kept['low']:.3f}, {kept['high']:.3f}]")
    return problems
