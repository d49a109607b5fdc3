"""Black-box epsilon lower bounds: search an output event on one half, certify it on the other.

A mechanism under audit is any function ``(dataset, n, rng) -> outputs`` that
returns ``n`` independent outputs (a length-``n`` array, or ``n`` rows). Given two
neighbouring datasets ``D0`` and ``D1`` the tester

1. draws ``samples`` outputs on each dataset;
2. on the first half, each event family of :mod:`dpkit.audit.mechanism.families`
   (thresholds of statistics, sets of outcomes, joint events over several
   columns, and DP-Sniper's learned classifiers {cite}`bichsel2021dpsniper`)
   proposes its best output event ``E`` and direction (``D1`` over ``D0`` or the
   reverse);
3. on the second half, which played no part in choosing them, counts how often
   each dataset's outputs fall in each family's event and computes the
   Clopper-Pearson lower confidence bound of
   :func:`dpkit.audit.mechanism.stats.epsilon_lower_bound` at the Bonferroni-corrected
   confidence ``1 - (1 - confidence) / k`` for ``k`` certified events (times
   ``correction``, e.g. the number of input pairs an outer search certifies);
   the largest is returned.

Because every event is fixed before the second half is looked at and the
union bound covers all ``k``, the returned bound is valid at the stated
confidence: for a correct epsilon-DP mechanism it exceeds epsilon with
probability at most ``1 - confidence``. The witness (the pair, the event and
the direction) can be re-checked on fresh samples with :func:`check_event`.
A mechanism whose outputs contain NaN or infinity is refused with an error:
it never passes.
"""

from __future__ import annotations

import functools
import json
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from dpkit.audit.mechanism import families as fam
from dpkit.audit.mechanism.events import FeatureEvent, SetEvent, check_outputs, jsonable, numeric_matrix
from dpkit.audit.mechanism.power import max_certifiable_epsilon
from dpkit.audit.mechanism.stats import epsilon_lower_bound
from dpkit.io import to_jsonable
from dpkit.validate import ParameterError, check_choice, check_in_range, check_int, check_rng

__all__ = ["Mechanism", "ThresholdEvent", "SetEvent", "FeatureEvent", "AuditResult", "audit", "check_event",
           "identity_statistic", "laplace_llr", "projection", "deviation_size", "FAMILIES"]

#: event families; "auto" picks by output type (see :func:`audit`)
FAMILIES = ("threshold", "set", "joint", "learned:logistic", "learned:boosting", "learned:mlp")

Mechanism = Callable[[Any, int, np.random.Generator], np.ndarray]
Statistic = Callable[[np.ndarray], np.ndarray]


def identity_statistic(outputs: np.ndarray) -> np.ndarray:
    """The output itself, for mechanisms whose output is one real number."""
    return np.asarray(outputs, dtype=float).reshape(len(outputs))


@dataclass(frozen=True)
class ThresholdEvent:
    """``statistic(output) > threshold`` (side ``">"``) or ``<= threshold`` (side ``"<="``)."""

    statistic: str
    side: str
    threshold: float

    def contains(self, values: np.ndarray) -> np.ndarray:
        return values > self.threshold if self.side == ">" else values <= self.threshold

    def to_dict(self) -> dict:
        return {"kind": "threshold", "statistic": self.statistic, "side": self.side,
                "threshold": float(self.threshold)}

    def __str__(self) -> str:
        return f"{self.statistic}(output) {self.side} {self.threshold:.6g}"


@dataclass
class AuditResult:
    """A lower confidence bound on epsilon with the evidence behind it."""

    claimed_epsilon: float | None
    lower_bound: float
    confidence: float
    delta: float
    event: ThresholdEvent | SetEvent | FeatureEvent
    numerator: str  # "D1": P[M(D1) in E] / P[M(D0) in E]; "D0": the reverse
    counts: dict
    search_lower_bound: float
    samples: int
    witness: dict = field(default_factory=dict)
    family: str = "threshold"
    families: list = field(default_factory=list)  # per family: search bound, certified bound, event
    certified_confidence: float | None = None  # per-event confidence after the Bonferroni correction
    warnings: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when the evidence does not contradict the claim (lower bound <= claim)."""
        return self.claimed_epsilon is None or self.lower_bound <= self.claimed_epsilon

    @property
    def point_estimate(self) -> float:
        """log of the raw frequency ratio on the certification half (no confidence attached)."""
        c = self.counts
        if c["k_numerator"] == 0:
            return 0.0
        if c["k_denominator"] == 0:
            return float("inf")
        return float(np.log((c["k_numerator"] / c["n_numerator"]) / (c["k_denominator"] / c["n_denominator"])))

    def to_dict(self) -> dict:
        return {"claimed_epsilon": self.claimed_epsilon, "lower_bound": self.lower_bound,
                "confidence": self.confidence, "delta": self.delta, "passed": self.passed,
                "point_estimate": self.point_estimate, "search_lower_bound": self.search_lower_bound,
                "samples": self.samples, "event": self.event.to_dict(), "numerator": self.numerator,
                "counts": dict(self.counts), "witness": self.witness, "family": self.family,
                "families": list(self.families), "certified_confidence": self.certified_confidence,
                "warnings": list(self.warnings)}

    def __str__(self) -> str:
        claim = "no claim" if self.claimed_epsilon is None else f"claimed epsilon {self.claimed_epsilon:.4g}"
        verdict = "PASS" if self.passed else "FAIL"
        return (f"{verdict}: epsilon >= {self.lower_bound:.4f} at {self.confidence:.0%} confidence "
                f"({claim}); event [{self.event}], numerator {self.numerator}")


# ----------------------------------------------------------------------------- helpers

def _jsonable(value):
    return to_jsonable(value, nonfinite="string")


def _quantize(values: np.ndarray, resolution: float) -> np.ndarray:
    return values if resolution == 0 else np.round(values / resolution) * resolution


def _draw(mechanism: Mechanism, dataset, n: int, rng: np.random.Generator, name: str) -> np.ndarray:
    outputs = np.asarray(mechanism(dataset, n, rng))
    if outputs.ndim == 0 or len(outputs) != n:
        raise ParameterError(name, outputs, f"the mechanism must return {n} outputs (an array of length {n})")
    if outputs.ndim > 2:
        raise ParameterError(name, outputs, "outputs must be a 1-d array or an (n, d) array of rows")
    return check_outputs(outputs, name)


def _default_statistics(outputs: np.ndarray) -> dict[str, Statistic]:
    if outputs.ndim == 1:
        return {"output": identity_statistic}
    d = outputs.shape[1]
    if d > 64:
        raise ParameterError("statistics", None,
                             f"outputs have {d} coordinates; pass statistics (e.g. a likelihood-ratio statistic)")
    return {f"coordinate[{i}]": (lambda x, i=i: np.asarray(x, dtype=float)[:, i]) for i in range(d)}


# ----------------------------------------------------------------------------- public API

def _choose_families(families, kind: str, matrix, d: int, has_statistics: bool) -> list[str]:
    if families == "search":  # "auto" without the slowest learner, for cheap input-pair searches
        return [f for f in _choose_families("auto", kind, matrix, d, has_statistics) if f != "learned:boosting"]
    if families != "auto":
        chosen = [families] if isinstance(families, str) else list(families)
        for f in chosen:
            check_choice("families", f, list(FAMILIES))
        return chosen
    if has_statistics:
        return ["threshold"]
    chosen = ["threshold"] if kind == "continuous" else ["set"]
    if matrix is not None and d >= 2:
        chosen += ["joint", "learned:logistic", "learned:boosting"]
    return chosen


def _one_thread(function):
    """Run ``function`` with native thread pools (OpenMP, BLAS) at one thread.

    The learned families fit and score scikit-learn models whose OpenMP threads
    spin while they wait: on a busy machine an audit of minutes became tens of
    minutes. One thread also makes a fit the same on every machine.
    """
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        with threadpool_limits(limits=1):
            return function(*args, **kwargs)

    return wrapped


def _family_candidate(family, out0, out1, matrix0, matrix1, stats_values, half, confidence, delta, seed):
    if family == "threshold":
        best = None
        for name, (v0, v1) in stats_values.items():
            bound, side, threshold, numerator = fam.threshold_search(v0[:half], v1[:half], confidence, delta)
            if best is None or bound > best.search_bound:
                best = fam.Candidate("threshold", bound, ThresholdEvent(name, side, threshold), numerator)
        return best
    if family == "set":
        a, b = (out0, out1) if matrix0 is None else (matrix0, matrix1)
        return fam.set_family(a[:half], b[:half], confidence, delta)
    if matrix0 is None:
        return None
    if family == "joint":
        return fam.joint_family(matrix0[:half], matrix1[:half], confidence, delta)
    return fam.learned_family(family.split(":", 1)[1], matrix0[:half], matrix1[:half], confidence, delta, seed)


def _membership(cand, out0, out1, stats_values, lo, hi):
    if isinstance(cand.event, ThresholdEvent):
        v0, v1 = stats_values[cand.event.statistic]
        return cand.event.contains(v0[lo:hi]), cand.event.contains(v1[lo:hi])
    return cand.event.contains(out0[lo:hi]), cand.event.contains(out1[lo:hi])


def _distinct(candidates, sel0, sel1, stats_values, half):
    """Drop candidates whose event holds for exactly the same selection samples as a better one."""
    seen, kept = set(), []
    for cand in sorted(candidates, key=lambda c: -c.search_bound):
        in0, in1 = _membership(cand, sel0, sel1, stats_values, 0, half)
        key = (cand.numerator, np.packbits(in0).tobytes(), np.packbits(in1).tobytes())
        if key not in seen:
            seen.add(key)
            kept.append(cand)
    return kept


@_one_thread
def audit(mechanism: Mechanism, d0, d1, *, samples: int, rng: np.random.Generator | None = None,
          claimed_epsilon: float | None = None, confidence: float = 0.95, delta: float = 0.0,
          output: str = "auto", statistics: Mapping[str, Statistic] | None = None,
          witness: Mapping[str, Any] | None = None, resolution: float = 1e-9,
          families: str | Sequence[str] = "auto", correction: int = 1) -> AuditResult:
    """Lower-bound the epsilon of ``mechanism`` on the neighbouring pair ``(d0, d1)``.

    ``output`` is ``"continuous"`` (thresholds of ``statistics``, by default
    the output itself or each of its coordinates), ``"discrete"`` (sets of
    outcomes) or ``"auto"``: discrete when every column of a numeric output
    takes at most 32 values (whatever its dtype), and for strings. ``families``
    is ``"auto"`` (the threshold or set family, plus, for outputs with several
    columns, joint events and the logistic and boosting classifiers; only
    thresholds when ``statistics`` are given) or a list from :data:`FAMILIES`.
    Families whose selection bound is below half the best are not certified
    (so they cost no confidence). ``correction`` multiplies the Bonferroni factor (an outer search that
    certifies several pairs passes their number). ``witness`` adds fields
    (e.g. the mechanism's name and the seed) to the returned witness. ``rng``
    defaults to fresh OS entropy. The bound holds at ``confidence`` for the
    stated ``delta`` (pure DP when 0): see the module docstring. A warning (also
    in ``result.warnings``) says when the samples cannot certify anything
    above the claim.

    ``resolution`` rounds continuous statistics to that grid before any event is
    formed, so that events depend on an output's value and not on its last bits.
    With ``resolution=0`` the search may find floating-point leaks: textbook
    Laplace noise added to integers leaks through its least significant bits
    {cite}`mironov2012significance`, and the tester does find that leak (see the
    audit chapter). It is a real flaw of floating-point noise, but not the one
    these audits are after, so it is excluded by default.
    """
    samples = check_int("samples", samples, minimum=20)
    rng = np.random.default_rng() if rng is None else check_rng("rng", rng)
    resolution = check_in_range("resolution", resolution, 0.0, 1.0)
    confidence = check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    delta = check_in_range("delta", delta, 0.0, 1.0, high_open=True)
    correction = check_int("correction", correction, minimum=1)
    check_choice("output", output, ["auto", "continuous", "discrete"])
    if claimed_epsilon is not None:
        claimed_epsilon = check_in_range("claimed_epsilon", claimed_epsilon, 0.0, float("inf"))
    if not callable(mechanism):
        raise ParameterError("mechanism", mechanism, "must be a callable (dataset, n, rng) -> outputs")

    out0 = _draw(mechanism, d0, samples, rng, "mechanism(d0)")
    out1 = _draw(mechanism, d1, samples, rng, "mechanism(d1)")
    matrix0, matrix1 = numeric_matrix(out0), numeric_matrix(out1)
    d = 1 if matrix0 is None else matrix0.shape[1]
    if output == "auto":
        if matrix0 is None:
            output = "discrete"
        else:
            pooled = np.vstack([matrix0[:2000], matrix1[:2000]])
            output = "discrete" if all(len(np.unique(col)) <= 32 for col in pooled.T) else "continuous"
    half = samples // 2
    n_test = samples - half
    chosen = _choose_families(families, output, matrix0, d, statistics is not None)

    stats_values = {}
    if "threshold" in chosen:
        stats_map = dict(statistics) if statistics is not None else _default_statistics(out0)
        if not stats_map:
            raise ParameterError("statistics", statistics, "must name at least one statistic")
        for name, fn in stats_map.items():
            v0 = _quantize(np.asarray(fn(out0), dtype=float).reshape(-1), resolution)
            v1 = _quantize(np.asarray(fn(out1), dtype=float).reshape(-1), resolution)
            if len(v0) != samples or len(v1) != samples:
                raise ParameterError("statistics", name, "each statistic must map n outputs to n numbers")
            stats_values[name] = (v0, v1)

    seed = int(rng.integers(2**31))
    candidates = [c for c in (_family_candidate(f, out0, out1, matrix0, matrix1, stats_values, half, confidence,
                                                delta, seed) for f in chosen) if c is not None]
    if not candidates and "set" in chosen:
        # more distinct outcomes than the samples can rank (a small sample of a mechanism with many
        # outcomes): rank the most frequent ones instead of giving up
        a, b = (out0, out1) if matrix0 is None else (matrix0, matrix1)
        candidates = [c for c in [fam.set_family(a[:half], b[:half], confidence, delta, most_frequent=True)]
                      if c is not None]
    if not candidates:
        raise ParameterError("families", chosen, "none of these event families applies to these outputs")
    # certify only the families that came close to the best on the selection half (decided before the
    # certification half is read, so the Bonferroni factor below counts exactly what is certified)
    top_search = max(c.search_bound for c in candidates)
    candidates = [c for c in candidates if c.search_bound >= 0.5 * top_search and (c.search_bound > 0 or
                                                                                    c is candidates[0])]
    candidates = _distinct(candidates, out0[:half], out1[:half], stats_values, half)[:4]
    certified_confidence = 1.0 - (1.0 - confidence) / (len(candidates) * correction)
    report, best = [], None
    for cand in candidates:
        in0, in1 = _membership(cand, out0, out1, stats_values, half, samples)
        k0, k1 = int(in0.sum()), int(in1.sum())
        kn, kd = (k1, k0) if cand.numerator == "D1" else (k0, k1)
        bound = float(epsilon_lower_bound(kn, n_test, kd, n_test, certified_confidence, delta))
        report.append({"family": cand.family, "search_bound": cand.search_bound, "certified_bound": bound,
                       "event": str(cand.event), "numerator": cand.numerator})
        if best is None or bound > best[0]:
            best = (bound, cand, kn, kd)
    lower, cand, kn, kd = best
    notes = []
    ceiling = max_certifiable_epsilon(n_test, certified_confidence)
    if claimed_epsilon is not None and claimed_epsilon >= ceiling:
        notes.append(f"{samples} samples per dataset cannot certify any epsilon above {ceiling:.3g} at this "
                     f"confidence, so they cannot refute the claim {claimed_epsilon:g}; see "
                     "dpkit.audit.mechanism.power.samples_needed")
        warnings.warn(notes[-1], stacklevel=2)
    counts = {"k_numerator": kn, "n_numerator": n_test, "k_denominator": kd, "n_denominator": n_test}
    record = {"D0": _jsonable(d0) if _is_small(d0) else repr(d0)[:2000],
              "D1": _jsonable(d1) if _is_small(d1) else repr(d1)[:2000],
              "event": cand.event.to_dict(), "numerator": cand.numerator, "samples": samples,
              "confidence": confidence, "delta": delta, "counts": counts, "family": cand.family,
              "certified_confidence": certified_confidence}
    record.update(dict(witness or {}))
    return AuditResult(claimed_epsilon, lower, confidence, delta, cand.event, cand.numerator, counts,
                       float(cand.search_bound), samples, record, family=cand.family, families=report,
                       certified_confidence=certified_confidence, warnings=notes)


def _is_small(value) -> bool:
    try:
        return len(json.dumps(_jsonable(value))) <= 4000
    except (TypeError, ValueError):
        return False


def check_event(mechanism: Mechanism, d0, d1, event: ThresholdEvent | SetEvent | FeatureEvent, numerator: str, *,
                samples: int, rng: np.random.Generator, confidence: float = 0.95, delta: float = 0.0,
                statistics: Mapping[str, Statistic] | None = None, resolution: float = 1e-9) -> float:
    """Re-check a witness on fresh samples: the lower bound for a fixed event and direction.

    All ``samples`` draws per dataset are used, since nothing is searched here.
    """
    samples = check_int("samples", samples, minimum=1)
    check_rng("rng", rng)
    check_choice("numerator", numerator, ["D0", "D1"])
    out0 = _draw(mechanism, d0, samples, rng, "mechanism(d0)")
    out1 = _draw(mechanism, d1, samples, rng, "mechanism(d1)")
    if isinstance(event, ThresholdEvent):
        stats_map = dict(statistics) if statistics is not None else _default_statistics(out0)
        if event.statistic not in stats_map:
            raise ParameterError("event", event.statistic, f"statistic must be one of {sorted(stats_map)}")
        fn = stats_map[event.statistic]
        resolution = check_in_range("resolution", resolution, 0.0, 1.0)
        in0 = event.contains(_quantize(np.asarray(fn(out0), dtype=float).reshape(-1), resolution))
        in1 = event.contains(_quantize(np.asarray(fn(out1), dtype=float).reshape(-1), resolution))
    elif isinstance(event, (SetEvent, FeatureEvent)):
        in0, in1 = event.contains(out0), event.contains(out1)
    else:
        raise ParameterError("event", event, "must be a ThresholdEvent, a SetEvent or a FeatureEvent")
    k0, k1 = int(in0.sum()), int(in1.sum())
    kn, kd = (k1, k0) if numerator == "D1" else (k0, k1)
    return float(epsilon_lower_bound(kn, samples, kd, samples, confidence, delta))


def laplace_llr(a, b) -> Statistic:
    """Privacy-loss ordering of Laplace noise around ``a`` (D0) versus ``b`` (D1), any scale.

    ``sum_i |y_i - a_i| - |y_i - b_i|`` is the Laplace log-likelihood ratio times
    the (unknown) scale, so its thresholds are the Neyman-Pearson events for a
    correct Laplace mechanism whatever its scale: the most powerful tests.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)

    def statistic(outputs: np.ndarray) -> np.ndarray:
        y = np.asarray(outputs, dtype=float)
        return (np.abs(y - a) - np.abs(y - b)).reshape(len(y), -1).sum(axis=1)

    return statistic


def projection(direction) -> Statistic:
    """``<y, direction>``: the Gaussian log-likelihood-ratio ordering when ``direction = b - a``."""
    direction = np.asarray(direction, dtype=float).reshape(-1)

    def statistic(outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs, dtype=float).reshape(len(outputs), -1) @ direction

    return statistic


def deviation_size(center) -> Statistic:
    """``sum_i |y_i - center_i|``: large when the noise is wider (catches data-dependent noise scales)."""
    center = np.asarray(center, dtype=float)

    def statistic(outputs: np.ndarray) -> np.ndarray:
        y = np.asarray(outputs, dtype=float)
        return np.abs(y - center).reshape(len(y), -1).sum(axis=1)

    return statistic
