"""Argument checks shared by every public function.

Each check raises :class:`ParameterError` (a ``ValueError``) whose message names
the parameter, the offending value and what is allowed, so that bad input never
surfaces as a numpy warning or a silent NaN further down.
"""

from __future__ import annotations

import math
import resource
from numbers import Integral, Real
from typing import Iterable

import numpy as np


class ParameterError(ValueError):
    """A public argument is outside what the function allows."""

    def __init__(self, name: str, value, allowed: str):
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"{name}={_show(value)} is invalid: {allowed}")


def private_shape(value) -> str:
    """A stand-in for a PRIVATE value in an error message: its type and size, never its content.

    Errors are read by operators and land in logs; a text or label of the input
    must never appear there (row numbers and counts may).
    """
    if isinstance(value, str):
        return f"<a string of {len(value)} characters>"
    try:
        return f"<a {type(value).__name__} of {len(value)} items>"
    except TypeError:
        return f"<a {type(value).__name__}>"


def _show(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array(shape={value.shape}, dtype={value.dtype})"
    text = repr(value)  # a long value keeps its start and its end (a file's name is at the end of its path)
    return text if len(text) <= 80 else text[:38] + "..." + text[-39:]


def check_real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise ParameterError(name, value, "must be a real number")
    value = float(value)
    if not math.isfinite(value):
        raise ParameterError(name, value, "must be finite")
    return value


def check_positive(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, requiring ``> 0`` (or ``>= 0`` with ``allow_zero``)."""
    value = check_real(name, value)
    if value < 0 or (value == 0 and not allow_zero):
        raise ParameterError(name, value, "must be >= 0" if allow_zero else "must be > 0")
    return value


def check_in_range(name: str, value, low: float, high: float, *,
                   low_open: bool = False, high_open: bool = False) -> float:
    """Return ``value`` as a float, requiring it to lie in the stated interval."""
    value = check_real(name, value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        raise ParameterError(name, value, f"must lie in {left}{low}, {high}{right}")
    return value


def check_probability(name: str, value) -> float:
    """A delta or similar: strictly between 0 and 1."""
    return check_in_range(name, value, 0.0, 1.0, low_open=True, high_open=True)


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an int within ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ParameterError(name, value, "must be an integer")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ParameterError(name, value, f"must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise ParameterError(name, value, f"must be <= {maximum}")
    return value


def check_choice(name: str, value, allowed: Iterable) -> object:
    allowed = list(allowed)
    if value not in allowed:
        raise ParameterError(name, value, f"must be one of {allowed}")
    return value


def check_finite_array(name: str, value, *, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a float array, requiring finite entries (and ``ndim`` if given)."""
    array = np.asarray(value, dtype=float)
    if ndim is not None and array.ndim != ndim:
        raise ParameterError(name, value, f"must be a {ndim}-d array, got {array.ndim}-d")
    if not np.all(np.isfinite(array)):
        raise ParameterError(name, value, "must contain only finite numbers")
    return array


def check_unit_norm(name: str, value, *, atol: float = 1e-4) -> np.ndarray:
    """Rows of a 2-d array must have Euclidean norm 1 (within ``atol``)."""
    array = check_finite_array(name, value, ndim=2)
    norms = np.linalg.norm(array, axis=1)
    worst = float(np.max(np.abs(norms - 1.0))) if len(norms) else 0.0
    if worst > atol:
        raise ParameterError(name, value, f"rows must have unit norm (largest deviation {worst:.3g})")
    return array


def check_rng(name: str, value) -> np.random.Generator:
    """Randomness is always passed in: require a ``numpy.random.Generator``."""
    if not isinstance(value, np.random.Generator):
        raise ParameterError(name, value, "must be a numpy.random.Generator (e.g. np.random.default_rng(seed))")
    return value


def available_memory() -> int | None:
    """Bytes this process may still allocate: the kernel's MemAvailable, lowered to the address-space limit
    (``ulimit -v``/``prlimit --as``) when one is set; None where neither can be read."""
    found = None
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1):
        found = soft if found is None else min(found, soft)
    return found


def check_fits_memory(name: str, value, need_bytes: float, what: str) -> None:
    """Refuse ``name=value`` when the arrays it makes (``need_bytes``, estimated from public sizes) exceed the
    memory available now: a size that cannot run is bad input, refused before anything is charged or written."""
    free = available_memory()
    if free is not None and need_bytes > free:
        raise ParameterError(name, value, f"needs about {need_bytes / 2**30:,.1f} GiB for {what}, and "
                             f"{free / 2**30:,.1f} GiB are available; lower it (checked before anything "
                             "is charged or written)")


MAX_EPSILON = 1e4  # a public bound on a release's budget: above it a guarantee says nothing, and the
                   # accountant's rho = epsilon**2 / 2 (composed over charges) overflows near 1e154


def check_epsilon_cap(name: str, value) -> float:
    """A budget ``> 0`` and at most :data:`MAX_EPSILON`; the error names ``name`` (the flag or the field)."""
    value = check_positive(name, value)
    if value > MAX_EPSILON:
        raise ParameterError(name, value, f"must be <= {MAX_EPSILON:g}: a larger budget guarantees nothing and "
                             "overflows the accountant's arithmetic")
    return value
