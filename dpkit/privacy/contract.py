"""The privacy contract: what a mechanism promises, stated as data.

Every mechanism in :mod:`dpkit.privacy` carries a :class:`PrivacyContract`
naming the neighbouring relation, the unit of privacy, the privacy measure,
the sensitivity it was calibrated for and its cost.  The contract prints as a
short table, serialises to a dict (for run manifests and ledgers) and converts
its cost to zCDP so that a ledger can compose it with other mechanisms.

Parameters are data: ``kind`` names the mechanism family in a fixed vocabulary
(``"laplace"``, ``"gaussian"``, ``"exponential"``, ``"above_threshold"``,
``"private_token"``, ...) and ``parameters`` holds the numbers it was built
with (``scale``, ``S``, ``c``, ``s``, ``tau``...), so nothing downstream has
to read them back out of the human-readable ``note``.  The vocabulary is one
table, :data:`KINDS` (kind -> family and dp_accounting event); a contract of a
kind not in it is refused, and every consumer of kinds (the audit report's
re-derivations) keeps a row per kind (``tests/test_privacy_contract_kinds.py``).
:meth:`PrivacyContract.to_dp_event` turns a contract into a dp_accounting
``DpEvent`` for an independent accountant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from dpkit.privacy.zcdp import bounded_range_to_zcdp, pure_to_zcdp
from dpkit.validate import ParameterError, check_choice, check_in_range, check_positive

NEIGHBOURING_RELATIONS = ("add/remove", "replace-one")
MEASURES = ("pure", "bounded-range", "zcdp", "approx")

#: each measure in words (a contract's ``describe`` and a release's report state the measure this way)
MEASURE_WORDS = {
    "pure": "pure epsilon-DP",
    "bounded-range": "epsilon-bounded range (implies epsilon-DP and epsilon^2/8-zCDP)",
    "zcdp": "rho-zCDP",
    "approx": "approximate (epsilon, delta)-DP",
}

#: Kinds of additive noise whose dp_accounting event is exact (``parameters["noise"]``).
NOISES = ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian")


@dataclass(frozen=True)
class ContractKind:
    """One row of :data:`KINDS`: a mechanism family's machine name, who owns it, and how
    :meth:`PrivacyContract.to_dp_event` turns its contracts into a dp_accounting event.

    ``event``: ``"noise"`` (the exact event of ``parameters["noise"]`` when stated, else by measure),
    ``"randomized_response"`` (k-bucket randomized response from ``parameters["k"]`` and epsilon),
    ``"private_prediction"`` (Theorem 1 over ``parameters["r"]`` tokens), ``"dpsgd"`` (``steps``
    Poisson-subsampled Gaussian steps from ``noise_multiplier`` and ``sample_rate``) or ``"measure"`` (pure:
    binary randomized response; bounded range and zCDP: ``ZCDpEvent``; approximate: unsupported).
    """

    name: str
    family: str
    event: str
    about: str
    #: for a kind that states a whole run of private tokens per batch: the kind of one of its tokens ("" otherwise)
    token_kind: str = ""


_EVENTS = ("noise", "randomized_response", "private_prediction", "dpsgd", "measure")

#: Every contract kind dpkit states, once: kind -> :class:`ContractKind`.
KINDS: Mapping[str, ContractKind] = MappingProxyType({row.name: row for row in (
    ContractKind("laplace", "privacy core", "noise", "Laplace noise (continuous or on a grid) on a query"),
    ContractKind("gaussian", "privacy core", "noise", "Gaussian noise on a query"),
    ContractKind("exponential", "privacy core", "measure", "exponential mechanism (exact sampling)"),
    ContractKind("noisy_top_k", "privacy core", "measure", "top-k by Gumbel noise (one-shot)"),
    ContractKind("above_threshold", "private prediction", "measure", "AboveThreshold (sparse vector)"),
    ContractKind("randomized_response", "labels", "randomized_response", "k-ary randomized response"),
    ContractKind("vocabulary_histogram", "DP-KPS", "noise", "Laplace histogram of the first S terms"),
    ContractKind("dpkde", "DP-KPS", "noise", "Laplace noise on a random-Fourier-feature sketch"),
    ContractKind("private_token", "private prediction", "measure", "one private token (Amin et al.)"),
    ContractKind("private_prediction", "private prediction", "private_prediction",
                 "r private tokens per batch (Theorem 1)", token_kind="private_token"),
    ContractKind("invisibleink_token", "private prediction", "measure", "one InvisibleInk token (DClip, Top-k+)"),
    ContractKind("private_prediction_invisibleink", "private prediction", "measure",
                 "r InvisibleInk tokens per batch", token_kind="invisibleink_token"),
    ContractKind("dpst_triple", "DP-ST", "measure", "a triple by the exponential mechanism in a neighbourhood"),
    ContractKind("dpst_neighbourhood", "DP-ST", "measure", "DP-ST's per-triple split (relaxed relation)"),
    ContractKind("dpst_document", "DP-ST", "measure", "DP-ST's document-level slots"),
    ContractKind("dpst_topic", "DP-ST", "randomized_response", "a topic by randomized response, public triples"),
    ContractKind("dpsgd", "fine-tuning", "dpsgd", "DP-SGD: Poisson-subsampled Gaussian steps on clipped gradients"),
)})
for _row in KINDS.values():
    assert _row.event in _EVENTS, _row
    assert not _row.token_kind or _row.token_kind in KINDS, _row

#: The kinds that state a whole run of private tokens (r tokens per batch), from the table.
RUN_KINDS = tuple(row.name for row in KINDS.values() if row.token_kind)


def _parameter_value(name: str, value):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) or hasattr(value, "item"):
        value = value.item() if hasattr(value, "item") else value
        if isinstance(value, float) and not math.isfinite(value):
            raise ParameterError(f"parameters[{name!r}]", value, "must be finite")
        return value
    raise ParameterError(f"parameters[{name!r}]", value, "must be a number, a string, a bool or None")


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
    ``kind`` (a short machine name of the mechanism family, ``""`` when not
    stated) and ``parameters`` (name -> number, string, bool or None, read-only)
    carry what the mechanism was built with; ``parameters["noise"]`` in
    :data:`NOISES` with ``parameters["scale"]`` marks additive noise.
    """

    __slots__ = ("mechanism", "neighbouring", "unit", "measure", "sensitivity", "epsilon", "delta",
                 "rho_parameter", "note", "sensitivity_norm", "kind", "parameters")

    def __init__(self, mechanism: str, neighbouring: str, unit: str, measure: str, sensitivity: float,
                 epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                 note: str = "", sensitivity_norm: str = "", kind: str = "",
                 parameters: Mapping[str, Any] | None = None) -> None:
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
        if not isinstance(kind, str) or (kind and kind not in KINDS):
            raise ParameterError("kind", kind, "must be '' or a kind of dpkit.privacy.contract.KINDS "
                                 f"({', '.join(KINDS)}); a new mechanism family adds its row there")
        if parameters is None:
            parameters = {}
        if not isinstance(parameters, Mapping):
            raise ParameterError("parameters", parameters, "must be a mapping of names to numbers")
        params = {str(k): _parameter_value(str(k), v) for k, v in sorted(parameters.items())}
        noise = params.get("noise")
        if noise is not None and (noise not in NOISES or not isinstance(params.get("scale"), (int, float))
                                  or isinstance(params.get("scale"), bool) or params["scale"] <= 0):
            raise ParameterError("parameters", params, f"'noise' must be one of {NOISES} with a positive 'scale'")
        values = dict(mechanism=mechanism, neighbouring=neighbouring, unit=unit, measure=measure,
                      sensitivity=sensitivity, epsilon=epsilon, delta=delta, rho_parameter=rho,
                      note=note, sensitivity_norm=sensitivity_norm, kind=kind,
                      parameters=MappingProxyType(params))
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key, value):
        raise AttributeError("PrivacyContract is immutable")

    def _key(self) -> tuple:
        return tuple(tuple(self.parameters.items()) if k == "parameters" else getattr(self, k)
                     for k in self.__slots__)

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
        data["parameters"] = dict(self.parameters)
        data.update(changes)
        return PrivacyContract(**data)

    def parameter(self, name: str):
        """The stated value of parameter ``name``; ParameterError naming what is stated when absent."""
        if name not in self.parameters:
            raise ParameterError("name", name, f"is not a parameter of this {self.mechanism!r} contract; "
                                 f"it states {sorted(self.parameters)}")
        return self.parameters[name]

    def rho(self) -> float:
        """The zCDP cost: eps^2/2 (pure), eps^2/8 (bounded range), rho (zCDP).

        An approximate (epsilon, delta) guarantee has no zCDP cost; asking for
        one raises :class:`ParameterError` (ledgers compose those separately).
        """
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
        data["parameters"] = dict(self.parameters)
        data["rho_cost"] = None if self.measure == "approx" else self.rho()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PrivacyContract":
        """Inverse of :meth:`to_dict` (extra keys such as ``rho_cost`` are ignored).

        Ledgers saved before contracts carried ``kind`` and ``parameters`` load
        with ``kind=""`` and no parameters."""
        if not isinstance(data, Mapping):
            raise ParameterError("data", data, "must be a mapping as written by PrivacyContract.to_dict()")
        missing = [k for k in ("mechanism", "neighbouring", "unit", "measure", "sensitivity") if k not in data]
        if missing:
            raise ParameterError("data", dict(data), f"lacks the contract fields {missing}")
        fields = {k: data[k] for k in ("mechanism", "neighbouring", "unit", "measure", "sensitivity",
                                       "epsilon", "delta", "rho", "note", "sensitivity_norm", "kind", "parameters")
                  if k in data}
        return cls(**fields)

    def describe(self) -> str:
        lines = [
            f"mechanism      {self.mechanism}",
            f"neighbouring   {self.neighbouring} (one {self.unit})",
            f"unit           {self.unit}",
            f"measure        {MEASURE_WORDS[self.measure]}",
            f"sensitivity    {self.sensitivity:.6g}" + (f" ({self.sensitivity_norm})" if self.sensitivity_norm else ""),
        ]
        if self.epsilon is not None:
            lines.append(f"epsilon        {self.epsilon:.6g}")
        if self.delta:
            lines.append(f"delta          {self.delta:.3g}")
        if self.measure != "approx":
            lines.append(f"zCDP rho       {self.rho():.6g}")
        if self.parameters:
            shown = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in self.parameters.items())
            lines.append(f"parameters     {self.kind + ': ' if self.kind else ''}{shown}")
        if self.note:
            lines.append(f"note           {self.note}")
        return "\n".join(lines)

    def to_dp_event(self, runs: int = 1):
        """This contract as a dp_accounting ``DpEvent`` (for an independent accountant); with ``runs`` > 1, the
        event of that many runs of it (``SelfComposedDpEvent``). dp_accounting is imported here, its one place in
        :mod:`dpkit.privacy` (seconds to import; the ``[audit]`` extra).

        Additive noise gives its exact event: ``LaplaceDpEvent(scale/sensitivity)``,
        ``GaussianDpEvent(sigma/sensitivity)``, ``DiscreteLaplaceDpEvent`` on an
        integer grid; k-ary randomized response its k-bucket event. Otherwise the measure decides: pure epsilon-DP becomes
        binary randomized response at epsilon, the dominating pair of every
        epsilon-DP mechanism {cite}`kairouz2015composition`; bounded range and
        zCDP become ``ZCDpEvent`` at the contract's zCDP cost; private
        prediction becomes its Theorem-1 composition over ``r`` tokens; an
        approximate (epsilon, delta) contract is ``UnsupportedDpEvent``.
        """
        try:
            from dp_accounting import dp_event
        except ImportError as error:  # pragma: no cover - dp-accounting is in the audit extra
            raise ImportError("to_dp_event needs dp-accounting (pip install 'dpkit[audit]')") from error
        event = self._dp_event(dp_event)
        return event if runs == 1 else dp_event.SelfComposedDpEvent(event, runs)

    def _dp_event(self, dp_event):
        """One run's event (``dp_event``: dp_accounting's module, which :meth:`to_dp_event` imports)."""
        p = self.parameters
        if self.sensitivity == 0:
            return dp_event.NoOpDpEvent()
        how = KINDS[self.kind].event if self.kind else "noise"
        noise = p.get("noise") if how == "noise" else None
        if noise == "laplace":
            return dp_event.LaplaceDpEvent(noise_multiplier=p["scale"] / self.sensitivity)
        if noise == "gaussian":
            return dp_event.GaussianDpEvent(noise_multiplier=p["scale"] / self.sensitivity)
        if noise == "discrete_laplace":
            steps = self.sensitivity / float(p.get("grid", 1.0))
            if abs(steps - round(steps)) < 1e-9 and round(steps) >= 1:
                return dp_event.DiscreteLaplaceDpEvent(noise_parameter=float(p.get("grid", 1.0)) / p["scale"],
                                                      sensitivity=int(round(steps)))
        if how in _OWNED_EVENTS:
            event = _OWNED_EVENTS[how](self, dp_event)
            if event is not None:
                return event
        if how == "dpsgd" and p.get("sampling", "Poisson") == "Poisson" and isinstance(p.get("steps"), int):
            step = dp_event.PoissonSampledDpEvent(p["sample_rate"], dp_event.GaussianDpEvent(p["noise_multiplier"]))
            return dp_event.SelfComposedDpEvent(step, p["steps"])
        if self.measure == "pure":
            return _pure_event(dp_event, self.epsilon)
        if self.measure in ("bounded-range", "zcdp"):
            return dp_event.ZCDpEvent(self.rho())
        return dp_event.UnsupportedDpEvent()

    def __str__(self) -> str:
        return self.describe()


#: Events whose formula belongs to the module that owns the mechanism family: event name -> builder
#: ``(contract, dp_event) -> DpEvent or None`` (None: the contract lacks the parameters; the measure decides).
#: Filled by :func:`own_event` when that module loads (``dpkit.privacy`` loads them all), so the formula
#: is stated once, where the mechanism's contracts are built, and this module needs no import of it.
_OWNED_EVENTS: dict[str, Any] = {}


def own_event(event: str, builder) -> None:
    """Register ``builder`` as the one statement of the dp_accounting event named ``event`` in :data:`KINDS`
    (``"private_prediction"``: Theorem 1, registered by :mod:`dpkit.privacy.private_prediction`;
    ``"randomized_response"``: the k-bucket event, by :mod:`dpkit.privacy.randomized_response`)."""
    if event not in _EVENTS or event in ("noise", "measure"):
        raise ParameterError("event", event, f"must be an owned event of {_EVENTS} (not noise or measure)")
    current = _OWNED_EVENTS.get(event)
    named = (getattr(builder, "__module__", None), getattr(builder, "__qualname__", None))
    if current is not None and (current.__module__, current.__qualname__) != named:  # a module reloaded: the same
        raise ParameterError("event", event, f"already has an owner ({current.__module__}.{current.__qualname__})")
    _OWNED_EVENTS[event] = builder


def _pure_event(dp_event, epsilon: float):
    """Binary randomized response at ``epsilon``: P[keep] = e^eps / (1 + e^eps) (``dp_event``: dp_accounting's
    module, which :meth:`PrivacyContract.to_dp_event` imports)."""
    if epsilon == 0:
        return dp_event.NoOpDpEvent()
    return dp_event.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + math.exp(epsilon)), num_buckets=2)
