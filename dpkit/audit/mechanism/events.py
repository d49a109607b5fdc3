"""Output events the tester certifies, and the dtype-independent encoding they read.

An event is fixed before the certification samples are drawn; ``contains``
maps raw mechanism outputs (``n`` outputs, a length-``n`` array or ``n`` rows)
to a boolean mask. Numeric outputs (bool, any int or float dtype) are encoded
as an ``(n, d)`` float64 matrix, so an ``int8`` bit and a ``float`` 0/1 give the
same events and the same power. A mechanism that returns NaN or infinity is an
error (:func:`check_outputs`): a non-number cannot be an auditable release, and
an audit must never "pass" one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from dpkit.io import to_jsonable
from dpkit.validate import ParameterError

__all__ = ["check_outputs", "numeric_matrix", "SetEvent", "FeatureEvent", "jsonable"]


def jsonable(value):
    """A JSON-ready copy for records and display (:func:`dpkit.io.to_jsonable`, other objects kept)."""
    return to_jsonable(value, nonfinite="string", strict=False)


def check_outputs(outputs: np.ndarray, name: str) -> np.ndarray:
    """Refuse NaN and infinite outputs (numeric arrays, and floats inside object arrays)."""
    if outputs.dtype.kind in "fc":
        bad = ~np.isfinite(outputs)
    elif outputs.dtype == object:
        bad = np.array([isinstance(v, float) and not np.isfinite(v) for v in outputs.reshape(-1)], dtype=bool)
    else:
        return outputs
    if bad.any():
        share = float(bad.mean())
        raise ParameterError(name, f"{int(bad.sum())} non-finite values ({share:.1%})",
                             "the mechanism returned NaN or infinity; an audit needs real outputs "
                             "(a mechanism that returns NaN is broken, never private by default)")
    return outputs


def numeric_matrix(outputs: np.ndarray) -> np.ndarray | None:
    """``(n, d)`` float64 view of bool/int/float outputs; None for strings and objects."""
    outputs = np.asarray(outputs)
    if outputs.dtype.kind not in "biuf":
        return None
    return outputs.astype(np.float64).reshape(len(outputs), -1)


def _plain(outputs: np.ndarray) -> np.ndarray:
    return outputs.astype(str) if outputs.dtype == object else outputs


def _row_keys(rows: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(rows)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(len(rows))


@dataclass(frozen=True)
class SetEvent:
    """The output (or its ``columns``) is one of ``outcomes``.

    Numeric outputs are compared as float64 values, whatever their dtype;
    strings and objects as text.
    """

    outcomes: tuple
    columns: tuple | None = None

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        outputs = np.asarray(outputs)
        if not self.outcomes:
            return np.zeros(len(outputs), dtype=bool)
        matrix = numeric_matrix(outputs)
        if matrix is None:
            if outputs.ndim == 1:
                return np.isin(_plain(outputs), np.asarray(list(self.outcomes)))  # no dtype: never truncate
            rows = outputs if self.columns is None else outputs[:, list(self.columns)]
            wanted = np.asarray(self.outcomes, dtype=rows.dtype).reshape(-1, rows.shape[1])
            return np.isin(_row_keys(rows), _row_keys(wanted))
        rows = matrix if self.columns is None else matrix[:, list(self.columns)]
        wanted = np.asarray(self.outcomes, dtype=np.float64).reshape(-1, rows.shape[1])
        return np.isin(_row_keys(rows + 0.0), _row_keys(wanted + 0.0))  # + 0.0 merges -0.0 and 0.0

    def to_dict(self) -> dict:
        data = {"kind": "set", "outcomes": [jsonable(o) for o in self.outcomes]}
        if self.columns is not None:
            data["columns"] = list(self.columns)
        return data

    def __str__(self) -> str:
        shown = ", ".join(repr(jsonable(o)) for o in self.outcomes[:5])
        more = f", ... ({len(self.outcomes)} outcomes)" if len(self.outcomes) > 5 else ""
        where = "output" if self.columns is None else f"output[{', '.join(map(str, self.columns))}]"
        return f"{where} in {{{shown}{more}}}"


@dataclass(frozen=True, eq=False)
class FeatureEvent:
    """``statistic(encoded output) > threshold`` (side ``">"``) or ``<= threshold``; NaN is never in it.

    ``family`` names the search that built it (``"joint"``, ``"learned:logistic"``...),
    ``description`` says in words what the statistic is.
    """

    family: str
    description: str
    statistic: Callable[[np.ndarray], np.ndarray]
    side: str
    threshold: float

    def values(self, outputs: np.ndarray) -> np.ndarray:
        matrix = numeric_matrix(np.asarray(outputs))
        if matrix is None:
            raise ParameterError("outputs", outputs, "a feature event needs numeric outputs")
        return np.asarray(self.statistic(matrix), dtype=float).reshape(len(matrix))

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        v = self.values(outputs)
        with np.errstate(invalid="ignore"):
            inside = v > self.threshold if self.side == ">" else v <= self.threshold
        return inside & ~np.isnan(v)

    def to_dict(self) -> dict:
        return {"kind": self.family, "statistic": self.description, "side": self.side,
                "threshold": float(self.threshold)}

    def __str__(self) -> str:
        return f"{self.description} {self.side} {self.threshold:.6g}"
