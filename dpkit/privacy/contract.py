"""The privacy contract: what a mechanism promises, stated as data.

Every mechanism in :mod:`dpkit.privacy` carries a :class:`PrivacyContract`
naming the neighbouring relation, the unit of privacy, the privacy measure,
the sensitivity it was calibrated for and its cost.  The contract prints as a
short table, serialises to a dict (for run manifests and ledgers) and converts
its cost to zCDP so that a ledger can compose it with other mechanisms.
"""

from __future__ import annotations

from typing import Any, Mapping

from dpkit.validate import ParameterError, check_choice, check_in_range, check_positive

NEIGHBOURING_RELATIONS = ("add/remove", "replace-one")
MEASURES = ("pure", "bounded-range", "zcdp", "approx")

_MEASURE_WORDS = {
    "pure": "pure epsilon-DP",
    "bounded-range": "epsilon-bounded range (implies epsilon-DP and epsilon^2/8-zCDP)",
    "zcdp": "rho-zCDP",
    "approx": "approximate (epsilon, delta)-DP",
}


class PrivacyContract:
    """What one run of a mechanism guarantees (immutable).

    ``neighbouring``: ``"add/remove"`` (one unit added or removed) or
    ``"replace-one"`` (one unit changed).  ``unit``: what a neighbour differs by
    (``"document"``, ``"prompt"``...).  ``measure``: ``"pure"`` (needs
    ``epsilon``), ``"bounded-range"`` (needs ``epsilon``), ``"zcdp"`` (needs
    ``rho``; ``epsilon``/``delta`` may record an (epsilon, delta) guarantee it
    also meets) or ``"approx"`` (needs ``epsilon`` and ``delta``).
    ``sensitivity``: the bound on how much the released quantity can change
    between neighbours, in the norm named by ``sensitivity_norm``.

    The constructor argument ``rho`` is stored as :attr:`rho_parameter`;
    :meth:`rho` returns the zCDP cost for every measure that has one.
    """

    __slots__ = ("mechanism", "neighbouring", "unit", "measure", "sensitivity", "epsilon", "delta",
                 "rho_parameter", "note", "sensitivity_norm")

    def __init__(self, mechanism: str, neighbouring: str, unit: str, measure: str, sensitivity: float,
                 epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                 note: str = "", sensitivity_norm: str = "") -> None:
        if not isinstance(mechanism, str) or not mechanism:
            raise ParameterError("mechanism", mechanism, "must be a non-empty string")
        if not isinstance(unit, str) or not unit:
            raise ParameterError("unit", unit, "must be a non-empty string naming the unit of privacy")
        check_choice("neighbouring", neighbouring, NEIGHBOURING_RELATIONS)
        check_choice("measure", measure, MEASURES)
        sensitivity = check_positive("sensitivity", sensitivity, allow_zero=True)
        if epsilon is not None:
            epsilon = check_positive("epsilon", epsilon, allow_zero=True)
        delta = check_in_range("delta", delta, 0.0, 1.0, high_open=True)
        if rho is not None:
            rho = check_positive("rho", rho, allow_zero=True)
        if measure in ("pure", "bounded-range", "approx") and epsilon is None:
            raise ParameterError("epsilon", None, f"is required for measure {measure!r}")
        if measure in ("pure", "bounded-range") and delta != 0.0:
            raise ParameterError("delta", delta, f"must be 0 for measure {measure!r}")
        if measure == "zcdp" and rho is None:
            raise ParameterError("rho", None, "is required for measure 'zcdp'")
        if measure == "approx" and delta <= 0.0:
            raise ParameterError("delta", delta, "must be > 0 for measure 'approx' (use 'pure' for delta = 0)")
        if not isinstance(note, str):
            raise ParameterError("note", note, "must be a string")
        if not isinstance(sensitivity_norm, str):
            raise ParameterError("sensitivity_norm", sensitivity_norm, "must be a string such as 'L1'")
        values = dict(mechanism=mechanism, neighbouring=neighbouring, unit=unit, measure=measure,
                      sensitivity=sensitivity, epsilon=epsilon, delta=delta, rho_parameter=rho,
                      note=note, sensitivity_norm=sensitivity_norm)
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key, value):
        raise AttributeError("PrivacyContract is immutable")

    def _key(self) -> tuple:
        return tuple(getattr(self, k) for k in self.__slots__)

    def __eq__(self, other) -> bool:
        return isinstance(other, PrivacyContract) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__ if k != "rho_parameter")
        return f"PrivacyContract({args}, rho={self.rho_parameter!r})"

    def replace(self, **changes) -> "PrivacyContract":
        """A copy with some fields changed (e.g. ``unit='prompt'``), validated again."""
        data = {k: getattr(self, k) for k in self.__slots__ if k != "rho_parameter"}
        data["rho"] = self.rho_parameter
        data.update(changes)
        return PrivacyContract(**data)

    def rho(self) -> float:
        """The zCDP cost: eps^2/2 (pure), eps^2/8 (bounded range), rho (zCDP).

        An approximate (epsilon, delta) guarantee has no zCDP cost; asking for
        one raises :class:`ParameterError` (ledgers compose those separately).
        """
        from dpkit.privacy.zcdp import bounded_range_to_zcdp, pure_to_zcdp

        if self.measure == "pure":
            return pure_to_zcdp(self.epsilon)
        if self.measure == "bounded-range":
            return bounded_range_to_zcdp(self.epsilon)
        if self.measure == "zcdp":
            return float(self.rho_parameter)
        raise ParameterError("measure", self.measure,
                             "an approximate (epsilon, delta) contract has no zCDP cost")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``rho`` holds the stated zCDP parameter (or None)."""
        data = {k: getattr(self, k) for k in self.__slots__ if k != "rho_parameter"}
        data["rho"] = self.rho_parameter
        data["rho_cost"] = None if self.measure == "approx" else self.rho()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PrivacyContract":
        """Inverse of :meth:`to_dict` (extra keys such as ``rho_cost`` are ignored)."""
        if not isinstance(data, Mapping):
            raise ParameterError("data", data, "must be a mapping as written by PrivacyContract.to_dict()")
        missing = [k for k in ("mechanism", "neighbouring", "unit", "measure", "sensitivity") if k not in data]
        if missing:
            raise ParameterError("data", dict(data), f"lacks the contract fields {missing}")
        fields = {k: data[k] for k in ("mechanism", "neighbouring", "unit", "measure", "sensitivity",
                                       "epsilon", "delta", "rho", "note", "sensitivity_norm") if k in data}
        return cls(**fields)

    def describe(self) -> str:
        lines = [
            f"mechanism      {self.mechanism}",
            f"neighbouring   {self.neighbouring} (one {self.unit})",
            f"unit           {self.unit}",
            f"measure        {_MEASURE_WORDS[self.measure]}",
            f"sensitivity    {self.sensitivity:.6g}" + (f" ({self.sensitivity_norm})" if self.sensitivity_norm else ""),
        ]
        if self.epsilon is not None:
            lines.append(f"epsilon        {self.epsilon:.6g}")
        if self.delta:
            lines.append(f"delta          {self.delta:.3g}")
        if self.measure != "approx":
            lines.append(f"zCDP rho       {self.rho():.6g}")
        if self.note:
            lines.append(f"note           {self.note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()
