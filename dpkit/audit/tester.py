"""Black-box epsilon lower bounds: search an output event on one half, certify it on the other.

A mechanism under audit is any function ``(dataset, n, rng) -> outputs`` that
returns ``n`` independent outputs (a length-``n`` array, or ``n`` rows). Given two
neighbouring datasets ``D0`` and ``D1`` the tester

1. draws ``samples`` outputs on each dataset;
2. on the first half, searches for the output event ``E`` and the direction
   (``D1`` over ``D0`` or the reverse) that maximise a conservative estimate of
   the privacy loss - in the style of DP-Sniper {cite}`bichsel2021dpsniper`:
   thresholds on one-dimensional statistics of continuous outputs, and sets of
   outcomes ordered by their empirical probability ratio for discrete outputs;
3. on the second half, which played no part in choosing ``E``, counts how often
   each dataset's outputs fall in ``E`` and returns the Clopper-Pearson lower
   confidence bound of :func:`dpkit.audit.stats.epsilon_lower_bound`.

Because the event is fixed before the second half is looked at, the returned
bound is valid at the stated confidence: for a correct epsilon-DP mechanism it
exceeds epsilon with probability at most ``1 - confidence``. The witness (the
pair, the event and the direction) can be re-checked on fresh samples with
:func:`check_event`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from dpkit.audit.stats import epsilon_lower_bound
from dpkit.io import to_jsonable
from dpkit.validate import ParameterError, check_choice, check_in_range, check_int, check_rng

__all__ = ["Mechanism", "ThresholdEvent", "SetEvent", "AuditResult", "audit", "check_event",
           "identity_statistic", "laplace_llr", "projection", "deviation_size"]

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


@dataclass(frozen=True)
class SetEvent:
    """The output is one of ``outcomes`` (values for 1-d outputs, rows for 2-d outputs)."""

    outcomes: tuple

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        outputs = np.asarray(outputs)
        if not self.outcomes:
            return np.zeros(len(outputs), dtype=bool)
        if outputs.ndim == 1:
            return np.isin(_plain(outputs), np.asarray(list(self.outcomes)))  # no dtype: never truncate
        wanted = np.asarray(self.outcomes, dtype=outputs.dtype).reshape(-1, outputs.shape[1])
        return np.isin(_row_keys(outputs), _row_keys(wanted))

    def to_dict(self) -> dict:
        return {"kind": "set", "outcomes": [_jsonable(o) for o in self.outcomes]}

    def __str__(self) -> str:
        shown = ", ".join(repr(_jsonable(o)) for o in self.outcomes[:5])
        more = f", ... ({len(self.outcomes)} outcomes)" if len(self.outcomes) > 5 else ""
        return f"output in {{{shown}{more}}}"


@dataclass
class AuditResult:
    """A lower confidence bound on epsilon with the evidence behind it."""

    claimed_epsilon: float | None
    lower_bound: float
    confidence: float
    delta: float
    event: ThresholdEvent | SetEvent
    numerator: str  # "D1": P[M(D1) in E] / P[M(D0) in E]; "D0": the reverse
    counts: dict
    search_lower_bound: float
    samples: int
    witness: dict = field(default_factory=dict)

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
                "counts": dict(self.counts), "witness": self.witness}

    def __str__(self) -> str:
        claim = "no claim" if self.claimed_epsilon is None else f"claimed epsilon {self.claimed_epsilon:.4g}"
        verdict = "PASS" if self.passed else "FAIL"
        return (f"{verdict}: epsilon >= {self.lower_bound:.4f} at {self.confidence:.0%} confidence "
                f"({claim}); event [{self.event}], numerator {self.numerator}")


# ----------------------------------------------------------------------------- helpers

def _jsonable(value):
    return to_jsonable(value, nonfinite="string")


def _plain(outputs: np.ndarray) -> np.ndarray:
    return outputs.astype(str) if outputs.dtype == object else outputs


def _row_keys(rows: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(rows)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(len(rows))


def _quantize(values: np.ndarray, resolution: float) -> np.ndarray:
    return values if resolution == 0 else np.round(values / resolution) * resolution


def _draw(mechanism: Mechanism, dataset, n: int, rng: np.random.Generator, name: str) -> np.ndarray:
    outputs = np.asarray(mechanism(dataset, n, rng))
    if outputs.ndim == 0 or len(outputs) != n:
        raise ParameterError(name, outputs, f"the mechanism must return {n} outputs (an array of length {n})")
    if outputs.ndim > 2:
        raise ParameterError(name, outputs, "outputs must be a 1-d array or an (n, d) array of rows")
    return outputs


def _default_statistics(outputs: np.ndarray) -> dict[str, Statistic]:
    if outputs.ndim == 1:
        return {"output": identity_statistic}
    d = outputs.shape[1]
    if d > 64:
        raise ParameterError("statistics", None,
                             f"outputs have {d} coordinates; pass statistics (e.g. a likelihood-ratio statistic)")
    return {f"coordinate[{i}]": (lambda x, i=i: np.asarray(x, dtype=float)[:, i]) for i in range(d)}


def _threshold_search(a: np.ndarray, b: np.ndarray, confidence: float, delta: float):
    """Best (lower bound, side, threshold, numerator) among thresholds of two samples."""
    pooled = np.sort(np.concatenate([a, b]))
    m = len(pooled)
    tails = np.unique(np.round(np.geomspace(1, max(m // 2, 1), 80)).astype(int))
    idx = np.unique(np.concatenate([tails - 1, m - tails - 1, np.linspace(0, m - 1, 201).astype(int)]))
    idx = idx[(idx >= 0) & (idx < m)]
    thresholds = np.unique(pooled[idx])
    sa, sb = np.sort(a), np.sort(b)
    above_a = len(a) - np.searchsorted(sa, thresholds, side="right")
    above_b = len(b) - np.searchsorted(sb, thresholds, side="right")
    na, nb = len(a), len(b)
    options = []  # (bounds array, side, numerator)
    for side, ka, kb in ((">", above_a, above_b), ("<=", na - above_a, nb - above_b)):
        options.append((epsilon_lower_bound(kb, nb, ka, na, confidence, delta), side, "D1"))
        options.append((epsilon_lower_bound(ka, na, kb, nb, confidence, delta), side, "D0"))
    best = max(options, key=lambda o: float(np.max(o[0])))
    j = int(np.argmax(best[0]))
    return float(best[0][j]), best[1], float(thresholds[j]), best[2]


def _set_search(a: np.ndarray, b: np.ndarray, confidence: float, delta: float):
    """Best (lower bound, outcomes, numerator) among prefixes of outcomes ordered by ratio."""
    pooled = np.concatenate([a, b])
    if pooled.ndim == 1:
        values, inverse = np.unique(_plain(pooled), return_inverse=True)
    else:
        values, inverse = np.unique(pooled, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    ca = np.bincount(inverse[: len(a)], minlength=len(values))
    cb = np.bincount(inverse[len(a):], minlength=len(values))
    best = (-1.0, (), "D1")
    for numerator, cn, cd, nn, nd in (("D1", cb, ca, len(b), len(a)), ("D0", ca, cb, len(a), len(b))):
        order = np.argsort(-((cn + 0.5) / (cd + 0.5)), kind="stable")
        kn, kd = np.cumsum(cn[order]), np.cumsum(cd[order])
        bounds = epsilon_lower_bound(kn, nn, kd, nd, confidence, delta)
        j = int(np.argmax(bounds))
        if bounds[j] > best[0]:
            chosen = values[order[: j + 1]]
            best = (float(bounds[j]), tuple(_jsonable(v) for v in chosen), numerator)
    return best


# ----------------------------------------------------------------------------- public API

def audit(mechanism: Mechanism, d0, d1, *, samples: int, rng: np.random.Generator,
          claimed_epsilon: float | None = None, confidence: float = 0.95, delta: float = 0.0,
          output: str = "auto", statistics: Mapping[str, Statistic] | None = None,
          witness: Mapping[str, Any] | None = None, resolution: float = 1e-9) -> AuditResult:
    """Lower-bound the epsilon of ``mechanism`` on the neighbouring pair ``(d0, d1)``.

    ``output`` is ``"continuous"`` (events are thresholds of ``statistics``, by
    default the output itself or each of its coordinates), ``"discrete"`` (events
    are sets of outcomes) or ``"auto"`` (discrete for integer, boolean and string
    outputs). ``witness`` adds fields (e.g. the mechanism's name and the seed) to
    the returned witness. The bound holds at ``confidence`` for the stated
    ``delta`` (pure DP when 0): see the module docstring.

    ``resolution`` rounds continuous statistics to that grid before any event is
    formed, so that events depend on an output's value and not on its last bits.
    With ``resolution=0`` the search may find floating-point leaks: textbook
    Laplace noise added to integers leaks through its least significant bits
    {cite}`mironov2012significance`, and the tester does find that leak (see the
    audit chapter). It is a real flaw of floating-point noise, but not the one
    these audits are after, so it is excluded by default.
    """
    samples = check_int("samples", samples, minimum=20)
    check_rng("rng", rng)
    resolution = check_in_range("resolution", resolution, 0.0, 1.0)
    confidence = check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    delta = check_in_range("delta", delta, 0.0, 1.0, high_open=True)
    check_choice("output", output, ["auto", "continuous", "discrete"])
    if claimed_epsilon is not None:
        claimed_epsilon = check_in_range("claimed_epsilon", claimed_epsilon, 0.0, float("inf"))
    if not callable(mechanism):
        raise ParameterError("mechanism", mechanism, "must be a callable (dataset, n, rng) -> outputs")

    out0 = _draw(mechanism, d0, samples, rng, "mechanism(d0)")
    out1 = _draw(mechanism, d1, samples, rng, "mechanism(d1)")
    if output == "auto":
        kind = out0.dtype.kind
        output = "discrete" if kind in "biuUSOb" else "continuous"
    half = samples // 2
    n_test = samples - half

    if output == "continuous":
        stats_map = dict(statistics) if statistics is not None else _default_statistics(out0)
        if not stats_map:
            raise ParameterError("statistics", statistics, "must name at least one statistic")
        best = None
        values = {}
        for name, fn in stats_map.items():
            v0 = _quantize(np.asarray(fn(out0), dtype=float).reshape(-1), resolution)
            v1 = _quantize(np.asarray(fn(out1), dtype=float).reshape(-1), resolution)
            if len(v0) != samples or len(v1) != samples:
                raise ParameterError("statistics", name, "each statistic must map n outputs to n numbers")
            values[name] = (v0, v1)
            found = _threshold_search(v0[:half], v1[:half], confidence, delta)
            if best is None or found[0] > best[0]:
                best = (found[0], name, found[1], found[2], found[3])
        search_lb, stat_name, side, threshold, numerator = best
        event: ThresholdEvent | SetEvent = ThresholdEvent(stat_name, side, threshold)
        v0, v1 = values[stat_name]
        in0 = event.contains(v0[half:])
        in1 = event.contains(v1[half:])
    else:
        search_lb, outcomes, numerator = _set_search(out0[:half], out1[:half], confidence, delta)
        event = SetEvent(outcomes)
        in0 = event.contains(out0[half:])
        in1 = event.contains(out1[half:])

    k0, k1 = int(in0.sum()), int(in1.sum())
    if numerator == "D1":
        kn, kd = k1, k0
    else:
        kn, kd = k0, k1
    lower = float(epsilon_lower_bound(kn, n_test, kd, n_test, confidence, delta))
    counts = {"k_numerator": kn, "n_numerator": n_test, "k_denominator": kd, "n_denominator": n_test}
    record = {"D0": _jsonable(d0) if _is_small(d0) else repr(d0)[:2000],
              "D1": _jsonable(d1) if _is_small(d1) else repr(d1)[:2000],
              "event": event.to_dict(), "numerator": numerator, "samples": samples,
              "confidence": confidence, "delta": delta, "counts": counts}
    record.update(dict(witness or {}))
    return AuditResult(claimed_epsilon, lower, confidence, delta, event, numerator, counts,
                       float(search_lb), samples, record)


def _is_small(value) -> bool:
    try:
        import json

        return len(json.dumps(_jsonable(value))) <= 4000
    except (TypeError, ValueError):
        return False


def check_event(mechanism: Mechanism, d0, d1, event: ThresholdEvent | SetEvent, numerator: str, *,
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
    elif isinstance(event, SetEvent):
        in0, in1 = event.contains(out0), event.contains(out1)
    else:
        raise ParameterError("event", event, "must be a ThresholdEvent or a SetEvent")
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
