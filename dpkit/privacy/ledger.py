"""A privacy ledger: every mechanism a pipeline runs, its cost, and the total.

Costs compose in zCDP through :mod:`dpkit.privacy.composition` (sequential:
rho adds; parallel over disjoint batches assigned by a function of each record
alone: one batch's cost).  :meth:`PrivacyLedger.pure_epsilon` composes the pure
epsilons of the same entries by basic composition.  Approximate
(epsilon, delta) contracts, which have no zCDP cost, add by basic composition
and are combined with the zCDP part at the end.  A ledger with a budget
refuses, before anything is recorded, a spend that would exceed it.  All
entries must share one neighbouring relation and one unit of privacy: a total
over different units is not a guarantee about any of them.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from dpkit.io import atomic_write_text, dumps
from dpkit.privacy.composition import parallel_epsilon, parallel_rho, sequential_epsilon, sequential_rho
from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.zcdp import zcdp_to_epsilon
from dpkit.validate import ParameterError, check_int, check_positive, check_probability

_TOLERANCE = 1e-12  # relative slack for floating-point sums when checking a budget


class BudgetExceededError(RuntimeError):
    """A spend would take the ledger over its configured budget (nothing was recorded)."""


_COMPOSITIONS = ("sequential", "parallel")


@dataclass(frozen=True)
class Charge:
    """One charge: what is run (``label``), its contract (mechanism, neighbouring relation,
    unit, sensitivity, spend) and how it composes; also the ledger's entry once recorded.

    ``groups`` None: ``count`` sequential runs; an int: one run on each of ``groups``
    disjoint batches (parallel composition, ``count`` 1). ``mechanism``: the built object
    that draws (it carries ``.contract``; ``contract`` defaults to it), so what is charged
    and what draws are one object, built once from public parameters (OpenDP's measurement
    holds its privacy map the same way). A method declares its charges once; the plan
    (``--plan``) and the run both hand the same list to :meth:`PrivacyLedger.charge`, so
    the two ledgers cannot differ. The entries of a :class:`PrivacyLedger` are Charges (typed,
    as dp_accounting's ``DpEvent``); :meth:`to_dict`/:meth:`from_dict` are the JSON of a saved ledger.
    """

    label: str
    contract: PrivacyContract | None = None
    groups: int | None = None
    count: int = 1
    mechanism: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.label, str) or not self.label:
            raise ParameterError("label", self.label, "must be a non-empty string saying what was run")
        if self.contract is None:
            contract = getattr(self.mechanism, "contract", None)
            if not isinstance(contract, PrivacyContract):
                raise ParameterError("mechanism", type(self.mechanism).__name__,
                                     "must carry a PrivacyContract (.contract) when no contract is given")
            object.__setattr__(self, "contract", contract)
        if not isinstance(self.contract, PrivacyContract):
            raise ParameterError("contract", self.contract, "must be a PrivacyContract (e.g. mechanism.contract)")
        object.__setattr__(self, "count", check_int("count", self.count, minimum=0))
        if self.groups is not None:
            object.__setattr__(self, "groups", check_int("groups", self.groups, minimum=1))
            if self.count != 1:
                raise ParameterError("count", self.count, "must be 1 for a parallel charge (groups given)")

    # -- how it composes ----------------------------------------------------
    @property
    def parallel(self) -> bool:
        """True for one run on each of ``groups`` disjoint batches (costs as one run)."""
        return self.groups is not None

    @property
    def composition(self) -> str:
        return "parallel" if self.parallel else "sequential"

    @property
    def runs(self) -> int:
        """Sequential runs it costs: ``count``, or 1 for a parallel charge."""
        return 1 if self.parallel else self.count

    @property
    def rho(self) -> float:
        """Its zCDP cost (0 for an approximate contract, which composes separately)."""
        if self.contract.measure == "approx":
            return 0.0
        one = self.contract.rho()
        # parallel: the maximum over groups identical costs is that cost (parallel_rho([one]) checks it and
        # returns it without building a list of groups copies: to_dict() runs once per released document)
        return parallel_rho([one]) if self.parallel else sequential_rho([one] * self.count)

    @property
    def approx_epsilon(self) -> float:
        return self.runs * self.contract.epsilon if self.contract.measure == "approx" else 0.0

    @property
    def approx_delta(self) -> float:
        return self.runs * self.contract.delta if self.contract.measure == "approx" else 0.0

    def pure_epsilon(self) -> float:
        """Its pure epsilon by basic composition; ParameterError when the contract has none."""
        c = self.contract
        if c.epsilon is None or c.measure == "approx" or c.delta:
            raise ParameterError("ledger", self.label, "holds an entry without a pure epsilon "
                                 f"(measure {c.measure!r}); use ledger.epsilon(delta)")
        return (parallel_epsilon([c.epsilon]) if self.parallel  # the maximum of groups equal values
                else sequential_epsilon([c.epsilon] * self.count))

    def dp_event(self):
        """This charge as a dp_accounting event (None when it costs nothing: zero runs)."""
        if self.runs == 0:
            return None
        return self.contract.to_dp_event(self.runs)

    def describe(self) -> str:
        """``"parallel over N disjoint groups"`` or ``"sequential xN"``."""
        return f"parallel over {self.groups} disjoint groups" if self.parallel else f"sequential x{self.count}"

    # -- the file boundary --------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The entry as a saved ledger holds it (the format of every stored ledger)."""
        c, approx = self.contract, self.contract.measure == "approx"
        return {"label": self.label, "mechanism": c.mechanism, "measure": c.measure,
                "neighbouring": c.neighbouring, "unit": c.unit, "count": self.count if not self.parallel else 1,
                "groups": self.groups if self.parallel else 1, "composition": self.composition, "rho": self.rho,
                "epsilon": c.epsilon if approx else None, "delta": c.delta if approx else 0.0,
                "contract": c.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Charge":
        """An entry as :meth:`to_dict` wrote it (any stored ledger); a stored ``rho`` that its
        contract does not give is refused (so edits are caught)."""
        if isinstance(data, Charge):
            return data
        if not isinstance(data, Mapping) or not isinstance(data.get("contract"), Mapping):
            raise ParameterError("entry", data, "must be a ledger entry as Charge.to_dict() writes it")
        composition = data.get("composition", "sequential")
        if composition not in _COMPOSITIONS:
            raise ParameterError("composition", composition, f"must be one of {_COMPOSITIONS}")
        contract = PrivacyContract.from_dict(data["contract"])
        if composition == "parallel":
            charge = cls(data.get("label"), contract, groups=int(data.get("groups", 1)))
        else:
            charge = cls(data.get("label"), contract, count=int(data.get("count", 1)))
        stored = data.get("rho")
        if stored is not None and not math.isclose(charge.rho, stored, rel_tol=1e-9, abs_tol=1e-15):
            raise ParameterError("ledger", charge.label, f"stored rho {stored!r} does not match its contract "
                                 f"({charge.rho!r})")
        return charge

    def __getitem__(self, key: str):
        """Deprecated: entries were dicts; read the typed fields (``entry.contract.epsilon``, ``entry.rho``)."""
        warnings.warn("ledger entries are typed dpkit.privacy.Charge objects: read entry.label, entry.contract, "
                      "entry.rho, entry.composition (entry.to_dict() for the saved form)", DeprecationWarning,
                      stacklevel=2)
        return self.to_dict()[key]


class PrivacyLedger:
    """Records spends and enforces ``budget_rho`` and/or ``budget_epsilon`` (at ``delta``).

    ``delta = 0`` makes the budget a PURE one: entries compose by basic
    composition (:meth:`pure_epsilon`) and an entry without a pure epsilon is
    refused. :meth:`guarantee` is the ledger's composed ``(epsilon, delta)``,
    the number a release states. ``on_record(ledger)``, when set, is called right
    after each entry is recorded and before ``spend``/``spend_parallel`` returns
    (a run folder uses it to put the spend on disk before the work it pays for).
    ``entries`` are the recorded :class:`Charge` objects, in order.
    """

    def __init__(self, budget_rho: float | None = None, budget_epsilon: float | None = None,
                 delta: float | None = None, *, on_record: Callable[["PrivacyLedger"], None] | None = None) -> None:
        self.budget_rho = None if budget_rho is None else check_positive("budget_rho", budget_rho)
        self.budget_epsilon = None if budget_epsilon is None else check_positive("budget_epsilon", budget_epsilon)
        if delta is None or (isinstance(delta, (int, float)) and not isinstance(delta, bool) and delta == 0):
            self.delta = None if delta is None else 0.0
        else:
            self.delta = check_probability("delta", delta)
        if self.budget_epsilon is not None and self.delta is None:
            raise ParameterError("delta", None, "is required when budget_epsilon is set (0 for a pure budget)")
        if on_record is not None and not callable(on_record):
            raise ParameterError("on_record", on_record, "must be a callable taking the ledger, or None")
        # called with the ledger right after each entry is recorded, before spend() returns
        # (a run folder writes the ledger to disk there: spend on disk before the work it pays for)
        self.on_record = on_record
        self.entries: list[Charge] = []

    @property
    def pure(self) -> bool:
        """True when the ledger's delta is 0: a pure epsilon budget."""
        return self.delta == 0.0

    def guarantee(self) -> tuple[float, float]:
        """The composed guarantee ``(epsilon, delta)`` of every entry: pure basic composition when the
        ledger's delta is 0, otherwise the tight zCDP conversion at the ledger's delta."""
        if self.delta is None:
            raise ParameterError("delta", None, "the ledger was created without a delta; give one (0 for pure)")
        return (self.pure_epsilon(), 0.0) if self.pure else (self.epsilon(self.delta), self.delta)

    # -- totals ------------------------------------------------------------
    @property
    def rho(self) -> float:
        """Total zCDP cost of the zCDP-measurable entries (sequential composition of the entries)."""
        return sequential_rho(e.rho for e in self.entries)

    def pure_epsilon(self) -> float:
        """Total pure epsilon by basic composition: entries add, a parallel entry counts as one run.

        Every entry must carry a pure guarantee (measure pure or bounded range, or a
        zCDP contract that also states an epsilon with delta 0, such as NoisyTopK);
        otherwise ParameterError names the entry (use :meth:`PrivacyLedger.epsilon` at a delta).
        """
        return self._pure_total(self.entries)

    @staticmethod
    def _pure_total(entries: Iterable[Charge]) -> float:
        return sequential_epsilon(e.pure_epsilon() for e in entries)

    @property
    def approx_epsilon(self) -> float:
        return float(math.fsum(e.approx_epsilon for e in self.entries))

    @property
    def approx_delta(self) -> float:
        return float(math.fsum(e.approx_delta for e in self.entries))

    @property
    def neighbouring(self) -> str | None:
        return self.entries[0].contract.neighbouring if self.entries else None

    @property
    def unit(self) -> str | None:
        return self.entries[0].contract.unit if self.entries else None

    def epsilon(self, delta: float | None = None) -> float:
        """Total epsilon at ``delta`` (default: the ledger's delta), tight zCDP conversion.

        Approximate entries are added by basic composition: epsilon adds and
        their deltas are subtracted from the delta available to the zCDP part.
        """
        if delta is None:
            delta = self.delta
            if delta is None:
                raise ParameterError("delta", None, "give delta (the ledger was created without one)")
        if delta == 0:
            return self.pure_epsilon()
        return self._epsilon(self.rho, self.approx_epsilon, self.approx_delta,
                             check_probability("delta", delta))

    @staticmethod
    def _epsilon(rho: float, approx_eps: float, approx_delta: float, delta: float) -> float:
        remaining = delta - approx_delta
        if rho == 0 and remaining >= -_TOLERANCE * delta:  # approximate entries only (DP-SGD's one charge at
            return approx_eps                              # the ledger's delta): basic composition, nothing left
        if remaining <= 0:
            raise ParameterError("delta", delta, f"must exceed the approximate entries' total delta {approx_delta:.3g}")
        return approx_eps + (zcdp_to_epsilon(rho, remaining) if rho > 0 else 0.0)

    # -- spending ----------------------------------------------------------
    def charge(self, charge: Charge) -> Charge:
        """Record a declared :class:`Charge`; returns it, the ledger's entry (raises BudgetExceededError first)."""
        if not isinstance(charge, Charge):
            raise ParameterError("charge", charge, "must be a dpkit.privacy.ledger.Charge")
        if self.entries and charge.contract.neighbouring != self.neighbouring:
            raise ParameterError("contract", charge.contract.neighbouring,
                                 f"neighbouring relation differs from the ledger's {self.neighbouring!r}")
        if self.entries and charge.contract.unit != self.unit:
            raise ParameterError("contract", charge.contract.unit,
                                 f"unit of privacy differs from the ledger's {self.unit!r}")
        self._check_budget(charge)
        self.entries.append(charge)
        if self.on_record is not None:
            self.on_record(self)
        return charge

    def spend(self, contract: PrivacyContract, label: str, count: int = 1) -> Charge:
        """Record ``count`` sequential runs of the mechanism with ``contract``; returns the entry."""
        return self.charge(Charge(label, _contract(contract), count=count))

    def spend_parallel(self, contract: PrivacyContract, label: str, groups) -> Charge:
        """Record one run on each of ``groups`` disjoint batches; costs as one run.

        ``groups`` is the number of batches (int) or the batch index of every
        record (an iterable; the distinct values are counted).  The caller
        guarantees each record's batch is a function of that record alone
        (see :func:`dpkit.privacy.composition.hash_partition`).
        """
        if isinstance(groups, (bool, str, bytes)):
            raise ParameterError("groups", groups, "must be a number of batches or the batch of every record")
        if isinstance(groups, int) or (hasattr(groups, "is_integer") and not hasattr(groups, "__iter__")):
            n_groups = check_int("groups", groups, minimum=1)
        elif isinstance(groups, Iterable):
            distinct = {g.item() if hasattr(g, "item") else g for g in groups}
            if not distinct:
                raise ParameterError("groups", groups, "must name at least one batch")
            n_groups = len(distinct)
        else:
            raise ParameterError("groups", groups, "must be a number of batches or the batch of every record")
        return self.charge(Charge(label, _contract(contract), groups=n_groups))

    def replay(self, entries: Iterable[Charge | Mapping[str, Any]]) -> None:
        """Record ``entries`` again, in order: Charges, or saved entries (:meth:`Charge.from_dict`)."""
        for entry in entries:
            self.charge(Charge.from_dict(entry))

    def would_exceed(self, contract: PrivacyContract, count: int = 1) -> bool:
        """True when spending ``count`` runs of ``contract`` would break the budget."""
        try:
            self._check_budget(Charge("check", _contract(contract), count=count))
        except BudgetExceededError:
            return True
        return False

    def _check_budget(self, entry: Charge) -> None:
        rho, eps, delta, label = entry.rho, entry.approx_epsilon, entry.approx_delta, entry.label
        if self.pure and self.budget_epsilon is not None:
            try:
                total = self._pure_total(self.entries + [entry])
            except ParameterError:
                raise BudgetExceededError(f"spending {label!r} has no pure epsilon, and the budget is pure "
                                          f"epsilon={self.budget_epsilon:.6g}; nothing was recorded") from None
            if total > self.budget_epsilon * (1 + _TOLERANCE):
                raise BudgetExceededError(
                    f"spending {label!r} would bring the total to epsilon={total:.6g} (pure, basic composition), "
                    f"over the budget epsilon={self.budget_epsilon:.6g}; nothing was recorded")
            return
        new_rho = self.rho + rho
        if self.budget_rho is not None and new_rho > self.budget_rho * (1 + _TOLERANCE):
            raise BudgetExceededError(
                f"spending {label!r} (rho={rho:.6g}) would bring the total to rho={new_rho:.6g}, "
                f"over the budget rho={self.budget_rho:.6g} (spent so far {self.rho:.6g}); nothing was recorded")
        if self.budget_epsilon is not None:
            try:
                total = self._epsilon(new_rho, self.approx_epsilon + eps, self.approx_delta + delta, self.delta)
            except ParameterError:
                total = math.inf
            if total > self.budget_epsilon * (1 + _TOLERANCE):
                raise BudgetExceededError(
                    f"spending {label!r} would bring the total to epsilon={total:.6g} at delta={self.delta:.3g}, "
                    f"over the budget epsilon={self.budget_epsilon:.6g}; nothing was recorded")

    def remaining_rho(self) -> float | None:
        """zCDP budget left (None without ``budget_rho``)."""
        return None if self.budget_rho is None else max(0.0, self.budget_rho - self.rho)

    # -- reporting and persistence ---------------------------------------
    def table(self, delta: float | None = None) -> str:
        """A plain-text table of entries and totals."""
        delta = self.delta if delta is None else check_probability("delta", delta)
        header = f"{'label':<32} {'mechanism':<28} {'measure':<13} {'count':>6} {'groups':>6} {'rho':>12}"
        lines = [header, "-" * len(header)]
        for e in self.entries:
            c = e.contract
            cost = f"{e.rho:.6g}" if c.measure != "approx" else f"({c.epsilon:.3g},{c.delta:.1g})"
            lines.append(f"{e.label[:32]:<32} {c.mechanism[:28]:<28} {c.measure:<13} "
                         f"{e.runs:>6} {e.groups or 1:>6} {cost:>12}")
        lines.append("-" * len(header))
        lines.append(f"total rho = {self.rho:.6g}"
                     + (f" (budget {self.budget_rho:.6g})" if self.budget_rho is not None else ""))
        if delta == 0:
            lines.append(f"total epsilon = {self.pure_epsilon():.6g} (pure, basic composition)"
                         + (f" (budget {self.budget_epsilon:.6g})" if self.budget_epsilon is not None else ""))
        elif delta is not None:
            lines.append(f"total epsilon = {self.epsilon(delta):.6g} at delta = {delta:.3g} (tight conversion)"
                         + (f" (budget {self.budget_epsilon:.6g})" if self.budget_epsilon is not None else ""))
        if self.entries:
            lines.append(f"neighbouring: {self.neighbouring}; unit of privacy: {self.unit}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def to_dict(self) -> dict[str, Any]:
        data = {"budget_rho": self.budget_rho, "budget_epsilon": self.budget_epsilon, "delta": self.delta,
                "neighbouring": self.neighbouring, "unit": self.unit, "rho": self.rho,
                "entries": [e.to_dict() for e in self.entries]}
        if self.delta is not None:
            data["epsilon"] = self.epsilon(self.delta)
        return data

    def save(self, path: str | os.PathLike) -> Path:
        """Write the ledger as JSON (atomically); returns the path."""
        return atomic_write_text(path, dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PrivacyLedger":
        """Rebuild a ledger, re-deriving every cost from the stored contracts (so edits are caught)."""
        ledger = cls(data.get("budget_rho"), data.get("budget_epsilon"), data.get("delta"))
        ledger.replay(data.get("entries", []))
        return ledger

    @classmethod
    def load(cls, path: str | os.PathLike) -> "PrivacyLedger":
        path = Path(path)
        if not path.is_file():
            raise ParameterError("path", str(path), "must be an existing ledger JSON file")
        return cls.from_dict(json.loads(path.read_text()))


def _contract(contract) -> PrivacyContract:
    if not isinstance(contract, PrivacyContract):
        raise ParameterError("contract", contract, "must be a PrivacyContract (e.g. mechanism.contract)")
    return contract
