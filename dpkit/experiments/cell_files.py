"""One JSON file per comparison cell: its name, its JSON form, and whether a stored file holds a given cell.

:func:`cell_path` names a cell's file
``<out>/<dataset>__<method>__eps-<epsilon>__seed-<seed>.json`` (epsilon as
:func:`epsilon_label` writes it), so a folder holds each cell at most once.
:func:`json_safe` is the one JSON form a cell is stored and compared in (numpy
scalars as Python numbers, non-finite floats as the strings ``nan``, ``inf``,
``-inf``; a string holding the word ``NaN`` or ``Infinity`` is not kept as it was).

What it guarantees: :func:`cell_problem` accepts a file only when it holds
that very cell, unaltered (:func:`~dpkit.experiments.sealing.integrity_problem`:
its digest, and its seal when this user sealed it), made at the preset's public
sizes, with every provenance key (:data:`~dpkit.experiments.provenance.PROVENANCE_KEYS`)
and, when asked, by the given model. Otherwise it says which kind of problem
it is: ``missing``; ``integrity`` (not JSON, another cell's content, a digest
or seal that does not match), which is never made again silently; ``stale``
(other sizes, code or model), which is made again. :func:`verifies` is that
check under this user's results key.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from dpkit.experiments.presets import Preset
from dpkit.experiments.provenance import PROVENANCE_KEYS
from dpkit.experiments.sealing import integrity_problem, results_key, sealed_here


def cell_path(out: Path, dataset: str, method: str, epsilon: float, seed: int) -> Path:
    """The file of one cell in the folder ``out`` (spaces in a method's name become underscores)."""
    return Path(out) / f"{dataset}__{method.replace(' ', '_')}__eps-{epsilon_label(epsilon)}__seed-{seed}.json"


def epsilon_label(epsilon: float) -> str:
    """An epsilon as a cell records it: ``inf``, or the shortest decimal form (``%g``)."""
    return "inf" if math.isinf(epsilon) else f"{epsilon:g}"


def cell_problem(path: Path, preset: Preset, dataset: str, method: str, epsilon: float, seed: int,
                 model: str | None = None, key: bytes | None = None, *,
                 sealed: set[str] = frozenset()) -> tuple[str, str] | None:
    """``(kind, reason)`` when ``path`` does not hold this cell, unaltered, at this preset's sizes (and by
    ``model`` when given); None when it does. ``kind``: ``missing``; ``integrity`` (unreadable, another cell's
    content, a digest or seal that does not match); ``stale`` (another preset, sizes, provenance or model:
    written by other code or settings, made again without a word)."""
    path = Path(path)
    if not path.exists():
        return "missing", "no file"
    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError):
        return "integrity", "it is not valid JSON (truncated or damaged)"
    problem = integrity_problem(body, key, sealed_by_key=path.name in sealed)
    if problem is not None:
        return "integrity", problem
    if body.get("cell") != {"dataset": dataset, "method": method, "epsilon": epsilon_label(epsilon), "seed": seed}:
        return "integrity", "it holds another cell than its file name says"
    if (body.get("preset") != preset.name or body.get("sizes") != json_safe(preset.public_sizes())
            or not all(key_ in body.get("provenance", {}) for key_ in PROVENANCE_KEYS)):
        return "stale", "written at other sizes or by older code"
    if model is not None and body["provenance"]["model"] != model:
        return "stale", "written with another model"
    return None


def verifies(path: Path, preset: Preset, dataset: str, method: str, epsilon: float, seed: int,
             model: str | None = None) -> bool:
    """Whether ``path`` holds this cell, written at this preset's sizes (and by ``model`` when given), unaltered
    (its digest, and its seal when it is sealed under this user's results key)."""
    key = results_key()
    return cell_problem(path, preset, dataset, method, epsilon, seed, model, key,
                        sealed=sealed_here(Path(path).parent, key)) is None


def json_safe(value):
    """JSON-safe: numpy scalars to Python, non-finite floats to strings.

    It rewrites the tokens ``NaN`` and ``Infinity`` in the JSON text, so a string that contains either
    word is not kept as it was (or does not parse back: :class:`ValueError`)."""
    return json.loads(json.dumps(value, default=_default, allow_nan=True).replace("NaN", '"nan"')
                      .replace("-Infinity", '"-inf"').replace("Infinity", '"inf"'))


def _default(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
