"""Small shared helpers for the mechanisms (argument checks, output shapes)."""

from __future__ import annotations

from dpkit.validate import ParameterError, check_choice, check_int

from dpkit.privacy.contract import NEIGHBOURING_RELATIONS


def check_unit(unit) -> str:
    if not isinstance(unit, str) or not unit.strip():
        raise ParameterError("unit", unit, "must be a non-empty string naming the unit of privacy (e.g. 'document')")
    return unit


def check_neighbouring(neighbouring) -> str:
    return check_choice("neighbouring", neighbouring, NEIGHBOURING_RELATIONS)


def check_size(size) -> tuple[int, ...]:
    """``None`` -> (), an int -> (n,), a tuple of non-negative ints -> itself."""
    if size is None:
        return ()
    if isinstance(size, tuple | list):
        return tuple(check_int(f"size[{i}]", s, minimum=0) for i, s in enumerate(size))
    return (check_int("size", size, minimum=0),)
