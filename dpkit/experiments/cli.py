"""``dpkit experiment compare``: the method comparison at a size preset, one JSON per cell, resumable.

For each cell of the preset (:mod:`dpkit.experiments.presets`) the command
makes one release with the method's own ``synthesize``
(:data:`dpkit.methods.METHODS`, the code ``dpkit synth`` runs) through
:class:`~dpkit.experiments.cells.LocalCells`, scores it with the project's
classifier on the data set's real test texts, and writes
``<out>/<dataset>__<method>__eps-<epsilon>__seed-<seed>.json`` at once, sealed
(:class:`~dpkit.experiments.sweep.Sweep`, which says what a rerun resumes and
what it refuses). ``--methods`` and ``--datasets`` run part of a preset; a
later run with the others adds their cells to the same folder.

What it guarantees: a bad preset, method list, data set list or a missing
model file fails (exit 2) before any model is loaded or folder written; a
stored cell that fails its digest or seal is refused unless
``--recompute-failed``. The default folder is ``results/compare/<preset>``, or
``results/compare/<preset>-<model>`` with ``--model``: one model's cells
per default folder.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

from dpkit.experiments.cells import LocalCells
from dpkit.experiments.compare import METHOD_NAMES
from dpkit.experiments.presets import METHOD_ROWS, PRESETS, get_preset, parse_datasets, parse_methods
from dpkit.experiments.sweep import Sweep
from dpkit.models.named import check_local_model


def register(sub) -> None:
    """Add ``dpkit experiment compare`` to the sub-command parsers ``sub``."""
    parser = sub.add_parser("experiment", help="experiments outside the book build (results/)")
    inner = parser.add_subparsers(dest="experiment", required=True)
    cmp = inner.add_parser("compare", help="the three methods at equal epsilon, one JSON per cell (resumable)",
                           description="Presets: " + "; ".join(f"{p.name}: {p.estimate}" for p in PRESETS.values()))
    cmp.add_argument("--preset", default="smoke", help=f"size preset, one of {sorted(PRESETS)} (default smoke)")
    cmp.add_argument("--out", default=None, help="folder of the per-cell JSON files (default results/compare/<preset>)")
    cmp.add_argument("--methods", default=None,
                     help=f"comma-separated rows, some of {','.join(METHOD_ROWS)} (default: the preset's, "
                          f"{','.join(METHOD_NAMES)}; the others are extra rows); the real-data reference always "
                          "runs. A later run with more methods adds their cells")
    cmp.add_argument("--datasets", default=None,
                     help="comma-separated subset of the preset's data sets (default: all); a later run with the "
                          "others adds their cells to the same folder")
    cmp.add_argument("--model", default=None,
                     help="local model: the bundled SmolLM2 (default), qwen2.5-coder-1.5b (`make model-qwen`), or a "
                          ".gguf path; the default folder is then results/compare/<preset>-<model>")
    cmp.add_argument("--recompute-failed", action="store_true",
                     help="make again every stored cell of the folder that fails its digest or seal (default: "
                          "refuse, naming the file, exit 2); the command names each cell it makes again")
    cmp.set_defaults(func=_compare_command)


def _compare_command(args) -> int:
    preset = get_preset(args.preset)  # ParameterError before anything is loaded or written
    if args.methods is not None:
        preset = replace(preset, methods=parse_methods(args.methods))
    if args.datasets is not None:
        preset = replace(preset, datasets=parse_datasets(args.datasets, preset))
    check_local_model(args.model)  # a missing model file: exit 2 before any cell is computed or folder written
    start = time.perf_counter()
    cells = LocalCells(preset, model=args.model)
    model = cells.model()  # a named model whose packages are missing: ParameterError (exit 2) before any folder
    folder = preset.name if args.model is None else f"{preset.name}-{_slug(args.model)}"
    out = Path(args.out) if args.out else Path("results/compare") / folder
    sweep = Sweep(preset, out, cells, model=model, require_texts=True,
                  recompute_failed=getattr(args, "recompute_failed", False)).run()
    print(f"dpkit experiment compare --preset {preset.name}: {len(sweep.written)} cells written, "
          f"{len(sweep.skipped)} already done, in {time.perf_counter() - start:.0f} s -> {out}")
    return 0


def _slug(model: str) -> str:
    """A folder-name form of a model name or path.

    ``qwen2.5-coder-1.5b`` stays as it is; ``/x/My Model.gguf`` becomes ``my-model``.
    """
    stem = Path(str(model)).name
    stem = stem[:-5] if stem.lower().endswith(".gguf") else stem
    return re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-") or "model"
