"""Privacy accounting of private prediction (Algorithm 1 of {cite}`amin2024private`).

Neighbouring relation: add/remove one sensitive prompt.  Each private token is
softmax sampling at temperature tau from the average of s clipped logit
vectors (sensitivity c/s), i.e. the exponential mechanism at
epsilon = 2c/(s tau), bounded range: rho = (c/(s tau))^2 / 2 (Lemma 4).
With the sparse vector technique, each private token is preceded by one
AboveThreshold run on distances of sensitivity 1/s at noise sigma:
rho = 2/(s sigma)^2 (Lemma 5).  Batches assigned by a function of each prompt
alone compose in parallel, so r private tokens per batch cost (Theorem 1)

    rho = r * ( (c/(s tau))^2 / 2 + 2/(s sigma)^2 ).
"""

from __future__ import annotations

import math

from dpkit.validate import check_int, check_positive, check_probability

from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.zcdp import epsilon_to_zcdp, zcdp_to_epsilon

UNIT = "prompt"


def private_token_contract(batch_size: float, clip: float, temperature: float) -> PrivacyContract:
    """Contract of one private token (Lemma 4): bounded range at epsilon = 2c/(s tau)."""
    s = check_positive("batch_size", batch_size)
    c = check_positive("clip", clip)
    tau = check_positive("temperature", temperature)
    return PrivacyContract(
        mechanism="private token (softmax of averaged clipped logits)", neighbouring="add/remove",
        unit=UNIT, measure="bounded-range", sensitivity=c / s, epsilon=2.0 * c / (s * tau),
        sensitivity_norm="Linf of the averaged clipped logits",
        kind="private_token", parameters={"s": s, "c": c, "tau": tau},
        note=f"exponential mechanism: batch size s={s:g}, clip c={c:g}, temperature tau={tau:g}")


def svt_contract(batch_size: float, svt_sigma: float) -> PrivacyContract:
    """Contract of one sparse-vector run before a private token (Lemma 5): 2/(s sigma)-DP."""
    s = check_positive("batch_size", batch_size)
    sigma = check_positive("svt_sigma", svt_sigma)
    return PrivacyContract(
        mechanism="AboveThreshold (public vs private distance)", neighbouring="add/remove", unit=UNIT,
        measure="pure", sensitivity=1.0 / s, epsilon=2.0 / (s * sigma), sensitivity_norm="per query",
        kind="above_threshold", parameters={"sigma": sigma, "s": s},
        note=f"threshold noise Laplace({sigma:g}), query noise Laplace({2 * sigma:g}); L1 distance of averaged "
             "next-token distributions")


def per_token_rho(batch_size: float, clip: float, temperature: float, svt_sigma: float | None = None) -> float:
    """zCDP cost of one private token (plus its sparse-vector run when ``svt_sigma`` is given)."""
    rho = private_token_contract(batch_size, clip, temperature).rho()
    if svt_sigma is not None:
        rho += svt_contract(batch_size, svt_sigma).rho()
    return rho


def private_prediction_rho(tokens: int, batch_size: float, clip: float, temperature: float,
                           svt_sigma: float | None = None) -> float:
    """Theorem 1: rho = r ((c/(s tau))^2 / 2 + 2/(s sigma)^2); no SVT term without ``svt_sigma``."""
    r = check_int("tokens", tokens, minimum=0)
    return r * per_token_rho(batch_size, clip, temperature, svt_sigma)


def private_prediction_contract(tokens: int, batch_size: float, clip: float, temperature: float,
                                svt_sigma: float | None = None) -> PrivacyContract:
    """Contract of a whole run capped at ``tokens`` private tokens per batch (Theorem 1)."""
    rho = private_prediction_rho(tokens, batch_size, clip, temperature, svt_sigma)
    svt = "without SVT" if svt_sigma is None else f"SVT sigma={svt_sigma:g}"
    return PrivacyContract(
        mechanism="private prediction (Algorithm 1)", neighbouring="add/remove", unit=UNIT, measure="zcdp",
        sensitivity=clip / batch_size, rho=rho, sensitivity_norm="Linf of the averaged clipped logits",
        kind="private_prediction",
        parameters={"r": int(tokens), "s": float(batch_size), "c": float(clip), "tau": float(temperature),
                    "svt_sigma": None if svt_sigma is None else float(svt_sigma)},
        note=f"r={tokens} private tokens per batch, s={batch_size:g}, c={clip:g}, tau={temperature:g}, {svt}; "
             "batches assigned by a function of each prompt alone (parallel composition)")


def max_private_tokens(epsilon: float, delta: float, batch_size: float, clip: float, temperature: float,
                       svt_sigma: float | None = None) -> int:
    """Largest integer r whose Theorem-1 rho converts (tightly) to at most (epsilon, delta)."""
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    unit_rho = per_token_rho(batch_size, clip, temperature, svt_sigma)
    r = int(math.floor(epsilon_to_zcdp(epsilon, delta) / unit_rho * (1 + 1e-12)))
    while r > 0 and zcdp_to_epsilon(r * unit_rho, delta) > epsilon:
        r -= 1
    while zcdp_to_epsilon((r + 1) * unit_rho, delta) <= epsilon:
        r += 1
    return r
