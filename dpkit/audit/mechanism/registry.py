"""The auditable mechanisms: a name, how to build the audit case for a claimed epsilon, and how to run it.

An :class:`AuditCase` is everything the tester needs: the mechanism as a
function ``(dataset, n, rng) -> outputs`` wrapping dpkit's real code, a
neighbouring pair built on purpose to be worst case (``why_worst_case`` says
why), the claimed epsilon (and delta), the kind of output and, for continuous
outputs, the statistics whose thresholds are searched.

Each adapter module registers :class:`AuditSpec` objects; a spec builds its
case for any claimed epsilon, so ``python -m dpkit audit run NAME --epsilon E``
audits the mechanism *calibrated for* ``E``. The adapter modules are the files
of :mod:`dpkit.audit.mechanism.adapters` (:data:`ADAPTER_MODULES`, read from the
folder: a new method's mechanisms are audited by adding one file there, and no
list names it). Adapters whose method module is not importable are listed in
:func:`unavailable` with the reason, never faked.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from dpkit.audit.mechanism.tester import AuditResult, Mechanism, Statistic, audit
from dpkit.validate import ParameterError, check_in_range, check_int, check_positive

__all__ = ["AuditCase", "AuditSpec", "register", "specs", "get", "unavailable", "run_audit",
           "ADAPTER_MODULES"]

#: The adapter modules: every module of the ``adapters`` folder, by name (read from the folder, nothing imported).
ADAPTER_MODULES = tuple(f"{__package__}.adapters.{module.name}" for module in
                        sorted(pkgutil.iter_modules([str(Path(__file__).with_name("adapters"))]), key=lambda m: m.name))


@dataclass
class AuditCase:
    """One mechanism, calibrated for ``claimed_epsilon``, with its worst-case neighbouring pair."""

    mechanism: Mechanism
    d0: Any
    d1: Any
    claimed_epsilon: float
    why_worst_case: str
    output: str = "auto"
    statistics: Mapping[str, Statistic] | None = None
    delta: float = 0.0
    contract: Any = None  # the PrivacyContract the real code returned, when it returns one
    describe_pair: Mapping[str, Any] = field(default_factory=dict)
    #: exact ``max_y |log P0(y)/P1(y)|`` of this pair (None: not computed); an audit cannot certify more
    pair_loss: float | None = None


@dataclass(frozen=True)
class AuditSpec:
    """A registered audit: ``build(epsilon) -> AuditCase``."""

    name: str
    family: str
    summary: str
    build: Callable[[float], AuditCase]
    broken: bool = False
    bug: str = ""  # for broken variants: what is wrong
    correct_twin: str = ""  # for broken variants: the correct mechanism it breaks
    default_epsilon: float = 1.0
    test_samples: int = 20_000  # enough for the test suite to decide at the default epsilon
    max_samples: int = 100_000  # largest sample count worth drawing (slow adapters loop in Python)

    def to_dict(self) -> dict:
        return {"name": self.name, "family": self.family, "broken": self.broken, "summary": self.summary,
                "bug": self.bug, "correct_twin": self.correct_twin, "default_epsilon": self.default_epsilon}


_SPECS: dict[str, AuditSpec] = {}
_UNAVAILABLE: dict[str, str] = {}
_LOADED = False


def register(spec: AuditSpec) -> AuditSpec:
    """Add ``spec`` (names are unique)."""
    if spec.name in _SPECS and _SPECS[spec.name] is not spec:
        raise ParameterError("name", spec.name, "is already registered")
    _SPECS[spec.name] = spec
    return spec


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in ADAPTER_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as error:  # a method package that has not landed
            _UNAVAILABLE[module] = f"{type(error).__name__}: {error}"


def specs(broken: bool | None = None) -> list[AuditSpec]:
    """Registered audits, correct ones first; ``broken`` filters."""
    _load()
    chosen = [s for s in _SPECS.values() if broken is None or s.broken == broken]
    return sorted(chosen, key=lambda s: (s.broken, s.family, s.name))


def unavailable() -> dict[str, str]:
    """Adapter modules that could not be imported, with the reason."""
    _load()
    return dict(_UNAVAILABLE)


def get(name: str) -> AuditSpec:
    _load()
    if name not in _SPECS:
        raise ParameterError("name", name, f"must be one of {sorted(_SPECS)}")
    return _SPECS[name]


def run_audit(name: str, epsilon: float | None = None, samples: int = 100_000, seed: int = 0,
              confidence: float = 0.95) -> AuditResult:
    """Build ``name`` for the claimed ``epsilon`` (default: the spec's) and audit it.

    The witness records the name, epsilon, samples and seed: rerunning with the
    same four reproduces the result exactly.
    """
    spec = get(name)
    epsilon = spec.default_epsilon if epsilon is None else check_positive("epsilon", epsilon)
    samples = check_int("samples", samples, minimum=20)
    seed = check_int("seed", seed, minimum=0)
    confidence = check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    case = spec.build(epsilon)
    rng = np.random.default_rng(seed)
    witness = {"mechanism": name, "epsilon": epsilon, "seed": seed, "broken": spec.broken,
               "why_worst_case": case.why_worst_case,
               "rerun": f"python -m dpkit audit run {name} --epsilon {epsilon:g} --samples {samples} --seed {seed} --json"}
    if case.describe_pair:
        witness["pair"] = dict(case.describe_pair)
    if case.pair_loss is not None:
        witness["pair_loss"] = case.pair_loss
    if case.contract is not None and hasattr(case.contract, "to_dict"):
        witness["contract"] = case.contract.to_dict()
    return audit(case.mechanism, case.d0, case.d1, samples=samples, rng=rng,
                 claimed_epsilon=case.claimed_epsilon, confidence=confidence, delta=case.delta,
                 output=case.output, statistics=case.statistics, witness=witness)


def audit_row(name: str, samples: int, epsilon: float | None = None, seed: int = 0,
              confidence: float = 0.95) -> dict:
    """One audit as a flat dict (samples capped at the spec's ``max_samples``)."""
    spec = get(name)
    n = min(check_int("samples", samples, minimum=20), spec.max_samples)
    start = time.perf_counter()
    result = run_audit(name, epsilon, samples=n, seed=seed, confidence=confidence)
    return {"mechanism": name, "family": spec.family, "broken": spec.broken, "samples": n,
            "claimed_epsilon": result.claimed_epsilon, "lower_bound": result.lower_bound,
            "passed": result.passed, "event": str(result.event), "numerator": result.numerator,
            "family": result.family, "pair loss": result.witness.get("pair_loss"),
            "pair loss / claim": (None if result.witness.get("pair_loss") is None or not result.claimed_epsilon
                                  else result.witness["pair_loss"] / result.claimed_epsilon),
            "seconds": time.perf_counter() - start}
