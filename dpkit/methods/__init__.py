"""The three methods in one shape: ``synthesize(records, config, run, backend, seed_sequence) -> Release``.

>>> from dpkit.methods import METHODS, Records
>>> method = METHODS["kps"]                         # or "pp", "dpst"
>>> config = method.Config.smoke(epsilon=4.0)       # public parameters, validated
>>> release = method.synthesize(records, config, None, backend, np.random.SeedSequence())  # doctest: +SKIP

See :mod:`dpkit.methods.base` for the shape (and what each method module
declares), :mod:`dpkit.runs.layout` for the run folder (``release/`` and
``private/``) the ``dpkit synth`` command writes. The method modules load
PyTorch (private prediction's local model), so they are imported on first use of
``METHODS`` (or ``kps``/``pp``/``dpst``): ``dpkit --help`` stays light.
"""

from importlib import import_module

from dpkit.methods.base import PrivacyStatement, Records, Release

METHOD_NAMES = ("kps", "pp", "dpst")


def __getattr__(name: str):
    """``METHODS`` (name -> method module) and the method modules, imported on first use (heavy: PyTorch)."""
    if name == "METHODS":
        return {method: import_module(f"dpkit.methods.{method}") for method in METHOD_NAMES}
    if name in METHOD_NAMES:
        return import_module(f"dpkit.methods.{name}")
    raise AttributeError(f"module 'dpkit.methods' has no attribute {name!r}")


__all__ = ["METHODS", "METHOD_NAMES", "PrivacyStatement", "Records", "Release", "dpst", "kps", "pp"]
