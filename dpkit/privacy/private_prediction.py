"""Privacy accounting of private prediction (Algorithm 1 of {cite}`amin2024private`): the one home.

Neighbouring relation: add/remove one sensitive prompt.  Each private token is
softmax sampling at temperature tau from the average of s clipped logit
vectors (sensitivity c/s), i.e. the exponential mechanism.  Release mode
samples it exactly on logits quantized to the public grid ``token_grid(s, c)``
(:func:`dpkit.privacy.exact.exact_exponential_sample`), which adds the grid to
the sensitivity: epsilon = 2 (c/s + grid) / tau, bounded range, so
rho = ((c/s + grid)/tau)^2 / 2 (Lemma 4; the grid is 2^-30 c/s or less).
With the sparse vector technique, each private token is preceded by one
AboveThreshold run on distances of sensitivity 1/s at noise sigma, exact on a
grid of about 2^-30 / s: rho = 2 ((1/s + grid)/sigma)^2 (Lemma 5).  Batches assigned by a function of each prompt
alone compose in parallel, so r private tokens per batch cost (Theorem 1)

    rho = r * ( ((c/s + grid)/tau)^2 / 2 + 2 ((1/s + grid')/sigma)^2 ).

Every other module (the decoder, the pipeline's guarantee, ``dpkit account``,
the chapters) reads these numbers from here.
"""

from __future__ import annotations

import math

from dpkit.validate import ParameterError, check_int, check_positive, check_probability

from dpkit.privacy.contract import PrivacyContract, own_event
from dpkit.privacy.exponential import exponential_grid
from dpkit.privacy.sparse_vector import svt_grid
from dpkit.privacy.zcdp import epsilon_to_zcdp, zcdp_to_epsilon, zcdp_to_epsilon_bun_steinke

UNIT = "prompt"


#: The smallest expected batch size s: the sensitivities c/s and 1/s assume at least one prompt per batch.
MIN_BATCH_SIZE = 1.0
#: The rule on s in words, for errors and help texts (``dpkit account --batch-size``).
BATCH_SIZE_RULE = f"s >= {MIN_BATCH_SIZE:g}"


def check_batch_size(batch_size, name: str = "batch_size") -> float:
    """The expected batch size s: a real number >= :data:`MIN_BATCH_SIZE` (the average of s prompts' logits);
    errors name ``name``. The one statement of the rule: every caller and help text reads it from here."""
    rule = f"must be a finite number >= {MIN_BATCH_SIZE:g} (the expected number of prompts per batch)"
    try:
        s = check_positive(name, batch_size)
    except ParameterError:  # 0, negative, nan, inf or not a number: the rule is >= 1, not > 0
        raise ParameterError(name, batch_size, rule) from None
    if s < MIN_BATCH_SIZE:
        raise ParameterError(name, batch_size, rule)
    return s


#: the range of ``c/(s tau)`` (and of ``1/(s sigma)``) within which one private token's cost,
#: ``rho = (c/(s tau))^2 / 2`` up to the grid, is a positive finite float: outside it rho underflows to 0
#: (no cap ``r`` exists) or overflows to infinity
COST_RATIO_RANGE = (1e-150, 1e150)


def check_cost_ratio(names: str, ratio: float, given: str) -> None:
    """Refuse a ratio such as ``c/(s tau)`` outside :data:`COST_RATIO_RANGE`, naming the parameters it is made
    of (``names``) and their values (``given``), before any cost is computed from it."""
    low, high = COST_RATIO_RANGE
    if not low <= ratio <= high:
        way = ("underflows to 0: lower expected_batch_size or temperature, or raise clip" if ratio < low else
               "overflows: raise expected_batch_size or temperature, or lower clip")
        raise ParameterError(names, ratio, f"must be between {low:g} and {high:g} ({given}); outside it the cost "
                                           f"of one private token {way}")


def token_grid(batch_size: float, clip: float) -> float:
    """The public grid the averaged clipped logits are quantized to before a private token is drawn."""
    return exponential_grid(check_positive("clip", clip) / check_batch_size(batch_size))


def private_token_contract(batch_size: float, clip: float, temperature: float) -> PrivacyContract:
    """Contract of one private token (Lemma 4): bounded range at epsilon = 2 (c/s + grid) / tau."""
    s = check_batch_size(batch_size)
    c = check_positive("clip", clip)
    tau = check_positive("temperature", temperature)
    check_cost_ratio("clip/(expected_batch_size*temperature)", c / s / tau, f"clip={c:g}, s={s:g}, tau={tau:g}")
    grid = token_grid(s, c)
    return PrivacyContract(
        mechanism="private token (softmax of averaged clipped logits)", neighbouring="add/remove",
        unit=UNIT, measure="bounded-range", sensitivity=c / s + grid, epsilon=2.0 * (c / s + grid) / tau,
        sensitivity_norm="Linf of the averaged clipped logits, quantized",
        kind="private_token", parameters={"s": s, "c": c, "tau": tau, "grid": grid},
        note=f"exponential mechanism, exact sampling on logits rounded to {grid:.3g}: batch size s={s:g}, "
             f"clip c={c:g}, temperature tau={tau:g}")


def svt_contract(batch_size: float, svt_sigma: float) -> PrivacyContract:
    """Contract of one sparse-vector run before a private token (Lemma 5): 2 (1/s + grid)/sigma-DP."""
    s = check_batch_size(batch_size)
    sigma = check_positive("svt_sigma", svt_sigma)
    check_cost_ratio("1/(expected_batch_size*svt_sigma)", 1.0 / s / sigma, f"s={s:g}, sigma={sigma:g}")
    grid = svt_grid(1.0 / s, sigma)
    return PrivacyContract(
        mechanism="AboveThreshold (public vs private distance)", neighbouring="add/remove", unit=UNIT,
        measure="pure", sensitivity=1.0 / s + grid, epsilon=2.0 * (1.0 / s + grid) / sigma,
        sensitivity_norm="per query", kind="above_threshold", parameters={"sigma": sigma, "s": s, "grid": grid},
        note=f"threshold noise Laplace({sigma:g}), query noise Laplace({2 * sigma:g}), exact on the grid {grid:.3g}; "
             "L1 distance of averaged next-token distributions")


def token_rho(token: PrivacyContract, batch_size: float, svt_sigma: float | None = None) -> float:
    """zCDP cost of one private token of contract ``token``, plus its sparse-vector run when ``svt_sigma``
    is given (both variants of private prediction: :func:`per_token_rho`, InvisibleInk's)."""
    rho = token.rho()
    if svt_sigma is not None:
        rho += svt_contract(batch_size, svt_sigma).rho()
    return rho


def tokens_within(epsilon: float, delta: float, rho_per_token: float) -> int:
    """Largest integer r whose ``r * rho_per_token`` zCDP converts (tightly) to at most (epsilon, delta)."""
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    r = int(math.floor(epsilon_to_zcdp(epsilon, delta) / rho_per_token * (1 + 1e-12)))
    while r > 0 and zcdp_to_epsilon(r * rho_per_token, delta) > epsilon:
        r -= 1
    while zcdp_to_epsilon((r + 1) * rho_per_token, delta) <= epsilon:
        r += 1
    return r


def rho_at_cap(tokens: int, rho_per_token: float) -> float:
    """zCDP of ``tokens`` private tokens per batch: they compose sequentially, disjoint batches in parallel."""
    return check_int("tokens", tokens, minimum=0) * rho_per_token


def guarantee_at_cap(tokens: int, delta: float, rho_per_token: float) -> dict:
    """The guarantee of a run capped at ``tokens`` private tokens per batch, each costing ``rho_per_token``
    (:func:`rho_at_cap`): rho, and epsilon at ``delta``.

    Keys: ``max_private_tokens``, ``rho``, ``rho_per_token``, ``delta``, ``epsilon`` (tight
    conversion) and ``epsilon_bun_steinke``. Both variants report it (:func:`private_prediction_guarantee`,
    :func:`dpkit.privacy.invisibleink.invisibleink_guarantee`).
    """
    delta = check_probability("delta", delta)
    rho = rho_at_cap(tokens, rho_per_token)
    return {"max_private_tokens": int(tokens), "rho": rho, "rho_per_token": rho_per_token, "delta": delta,
            "epsilon": zcdp_to_epsilon(rho, delta), "epsilon_bun_steinke": zcdp_to_epsilon_bun_steinke(rho, delta)}


def per_token_rho(batch_size: float, clip: float, temperature: float, svt_sigma: float | None = None) -> float:
    """zCDP cost of one private token (plus its sparse-vector run when ``svt_sigma`` is given)."""
    return token_rho(private_token_contract(batch_size, clip, temperature), batch_size, svt_sigma)


def private_prediction_rho(tokens: int, batch_size: float, clip: float, temperature: float,
                           svt_sigma: float | None = None) -> float:
    """Theorem 1: rho = r ((c/s + grid)/tau)^2 / 2 + r 2 ((1/s + grid')/sigma)^2; no SVT term without ``svt_sigma``."""
    return rho_at_cap(tokens, per_token_rho(batch_size, clip, temperature, svt_sigma))


def private_prediction_contract(tokens: int, batch_size: float, clip: float, temperature: float,
                                svt_sigma: float | None = None) -> PrivacyContract:
    """Contract of a whole run capped at ``tokens`` private tokens per batch (Theorem 1)."""
    rho = private_prediction_rho(tokens, batch_size, clip, temperature, svt_sigma)
    svt = "without SVT" if svt_sigma is None else f"SVT sigma={svt_sigma:g}"
    grid = token_grid(batch_size, clip)
    return PrivacyContract(
        mechanism="private prediction (Algorithm 1)", neighbouring="add/remove", unit=UNIT, measure="zcdp",
        sensitivity=clip / batch_size + grid, rho=rho, sensitivity_norm="Linf of the averaged clipped logits",
        kind="private_prediction",
        parameters={"r": int(tokens), "s": float(batch_size), "c": float(clip), "tau": float(temperature),
                    "svt_sigma": None if svt_sigma is None else float(svt_sigma), "grid": grid,
                    "svt_grid": None if svt_sigma is None else svt_grid(1.0 / batch_size, svt_sigma)},
        note=f"r={tokens} private tokens per batch, s={batch_size:g}, c={clip:g}, tau={temperature:g}, {svt}; "
             "batches assigned by a function of each prompt alone (parallel composition)")


def max_private_tokens(epsilon: float, delta: float, batch_size: float, clip: float, temperature: float,
                       svt_sigma: float | None = None) -> int:
    """Largest integer r whose Theorem-1 rho converts (tightly) to at most (epsilon, delta)."""
    return tokens_within(epsilon, delta, per_token_rho(batch_size, clip, temperature, svt_sigma))


def private_prediction_guarantee(tokens: int, delta: float, batch_size: float, clip: float, temperature: float,
                                 svt_sigma: float | None = None) -> dict:
    """A run's guarantee at its cap of ``tokens`` private tokens per batch: rho and epsilon at ``delta``
    (:func:`guarantee_at_cap`). The pipeline and ``dpkit account`` both report this."""
    return guarantee_at_cap(tokens, delta, per_token_rho(batch_size, clip, temperature, svt_sigma))


def run_dp_event(contract: PrivacyContract, dp_event):
    """Theorem 1 as a dp_accounting event for a run contract (kind ``private_prediction``): each of the ``r``
    tokens is the event of :func:`private_token_contract` composed with that of :func:`svt_contract` when the
    run has a sparse-vector test; None when the contract lacks ``r`` (an old ledger: the measure decides)."""
    p = contract.parameters
    if not isinstance(p.get("r"), int):
        return None
    parts = [private_token_contract(p["s"], p["c"], p["tau"]).to_dp_event()]
    if p.get("svt_sigma"):
        parts.append(svt_contract(p["s"], p["svt_sigma"]).to_dp_event())
    one = parts[0] if len(parts) == 1 else dp_event.ComposedDpEvent(parts)
    return dp_event.SelfComposedDpEvent(one, p["r"])


own_event("private_prediction", run_dp_event)
