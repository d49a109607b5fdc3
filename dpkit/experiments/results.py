"""The former single module of ``dpkit experiment compare``, now split by job; its names still resolve here.

Where each name lives now: the presets in :mod:`dpkit.experiments.presets`,
cell files and their checks in :mod:`dpkit.experiments.cell_files`, digests
and seals in :mod:`dpkit.experiments.sealing`, provenance in
:mod:`dpkit.experiments.provenance`, the resumable sweep in
:mod:`dpkit.experiments.sweep` and the command in
:mod:`dpkit.experiments.cli`. Reading a name from this module returns the same
object and emits a :class:`DeprecationWarning` that names its new module.
"""

from __future__ import annotations

import warnings
from importlib import import_module

#: Each name this module held -> (the module that holds it now, its name there).
MOVED: dict[str, tuple[str, str]] = {
    **{name: ("dpkit.experiments.presets", name)
       for name in ("REAL", "LABEL_ONLY", "Preset", "AS_SYNTH_SMALL", "LATER_SIZES", "SEEDS", "PRESETS",
                    "get_preset", "parse_methods", "parse_datasets")},
    **{name: ("dpkit.experiments.cell_files", name) for name in ("cell_path", "cell_problem", "verifies")},
    "_eps": ("dpkit.experiments.cell_files", "epsilon_label"),
    "_plain": ("dpkit.experiments.cell_files", "json_safe"),
    **{name: ("dpkit.experiments.sealing", name)
       for name in ("KEY_NAME", "SEALED_CELLS", "results_key", "key_id", "seal", "integrity_problem",
                    "register_sealed", "sealed_here")},
    "_digest": ("dpkit.experiments.sealing", "content_digest"),
    **{name: ("dpkit.experiments.provenance", name) for name in ("PROVENANCE_KEYS", "machine", "git_commit")},
    **{name: ("dpkit.experiments.sweep", name) for name in ("Sweep", "eta", "cells_done")},
    **{name: ("dpkit.experiments.cli", name) for name in ("register", "_slug")},
}


def __getattr__(name: str):
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, new_name = MOVED[name]
    warnings.warn(f"dpkit.experiments.results.{name} is now {module}.{new_name}; import it from {module}",
                  DeprecationWarning, stacklevel=2)
    return getattr(import_module(module), new_name)
