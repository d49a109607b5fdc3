"""The one list of methods: a name and the module that declares its :class:`~dpkit.methods.record.Method`.

Adding a method is two steps: write its module, ending in ``METHOD = Method(...)``
(:mod:`dpkit.methods.record` lists the fields), and add its line to
:data:`METHOD_MODULES`. Every name list of dpkit reads this one: ``dpkit synth``
and ``dpkit audit release`` (their choices and help), ``dpkit.methods.METHODS``
and ``METHOD_NAMES``, the plan, the report, the tests. A method defined outside
dpkit (a plugin, a test's toy) is added at run time with :func:`register_method`.

This module imports no method module: a name is enough for ``dpkit --help``.
A method module is imported on first use (:func:`get_method`); the three
built-in ones load PyTorch.
"""

from __future__ import annotations

from importlib import import_module

from dpkit.methods.record import Method
from dpkit.validate import ParameterError

#: name -> the module whose ``METHOD`` is that method's record. One line per method.
METHOD_MODULES: dict[str, str] = {
    "kps": "dpkit.methods.kps",
    "pp": "dpkit.methods.pp",
    "dpst": "dpkit.methods.dpst",
    "ft": "dpkit.methods.ft",
}


def method_names() -> tuple[str, ...]:
    """The registered methods' names, in registration order."""
    return tuple(METHOD_MODULES)


def get_method(name: str) -> Method:
    """The record of method ``name`` (its module imported on first use); ParameterError names an unknown one."""
    if name not in METHOD_MODULES:
        raise ParameterError("method", name, f"must be one of {', '.join(METHOD_MODULES)}")
    record = getattr(import_module(METHOD_MODULES[name]), "METHOD", None)
    if not isinstance(record, Method) or record.name != name:
        raise ParameterError("method", name, f"needs a METHOD = Method(name={name!r}, ...) at the end of "
                             f"{METHOD_MODULES[name]}")
    return record


def all_methods() -> dict[str, Method]:
    """name -> record, for every registered method (imports every method module)."""
    return {name: get_method(name) for name in METHOD_MODULES}


def register_method(name: str, module: str) -> None:
    """Add method ``name``, declared by ``module``'s ``METHOD``, at run time (a plugin; a test's toy method).

    Built-in methods are the lines of :data:`METHOD_MODULES`; a name is registered once."""
    if name in METHOD_MODULES and METHOD_MODULES[name] != module:
        raise ParameterError("name", name, f"is already registered (by {METHOD_MODULES[name]})")
    METHOD_MODULES[name] = module
