"""The methods in one shape: ``synthesize(records, config, run, backend, seed_sequence) -> Release``.

>>> from dpkit.methods import METHODS, Records
>>> method = METHODS["kps"]                         # or any name of METHOD_NAMES
>>> config = method.Config.smoke(epsilon=4.0)       # public parameters, validated
>>> release = method.synthesize(records, config, None, backend, np.random.SeedSequence())  # doctest: +SKIP

``METHODS[name]`` is the method's record (:class:`~dpkit.methods.record.Method`:
configuration class, privacy statement, charges, sizes, backends, ``synthesize``),
which its module declares once as ``METHOD``; the methods are the lines of
:data:`dpkit.methods.registry.METHOD_MODULES`. See :mod:`dpkit.methods.base`
for the shared types and :mod:`dpkit.runs.layout` for the run folder
(``release/`` and ``private/``) the ``dpkit synth`` command writes. The method
modules load PyTorch (private prediction's local model), so they are imported
on first use of ``METHODS`` (or ``kps``/``pp``/``dpst``): ``dpkit --help`` stays light.
"""

from importlib import import_module

from dpkit.methods.base import PrivacyStatement, Records, Release
from dpkit.methods.record import Method
from dpkit.methods.registry import METHOD_MODULES, all_methods, get_method, method_names, register_method


def __getattr__(name: str):
    """``METHOD_NAMES`` (the registry's names), ``METHODS`` (name -> record) and the method modules, on use."""
    if name == "METHOD_NAMES":
        return method_names()
    if name == "METHODS":
        return all_methods()
    if name in METHOD_MODULES:
        return import_module(METHOD_MODULES[name])
    raise AttributeError(f"module 'dpkit.methods' has no attribute {name!r}")


__all__ = ["METHODS", "METHOD_NAMES", "Method", "PrivacyStatement", "Records", "Release", "all_methods", "dpst",
           "get_method", "kps", "method_names", "pp", "register_method"]
