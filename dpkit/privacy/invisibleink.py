"""Privacy accounting of InvisibleInk's private decoding (Vinod, Pillutla, Thakurta 2025, arXiv 2507.02974).

The variant ``variant="invisibleink"`` of private prediction changes what one
private token is computed from; it keeps Algorithm 1's batching, cap ``r``,
ledger and runs. At each private step, with ``z_pub`` the PUBLIC row's logits
(public prompt + released tokens, never a private prompt) and ``z_i`` the
logits of private prompt ``i`` of the batch:

* DClip: ``d_i = clip(z_i - z_pub, -C, C)`` componentwise (only the difference
  from the public prediction is clipped);
* aggregate: ``u = z_pub + (1/s) sum_i d_i``, ``s`` the EXPECTED batch size (a
  public constant; the paper divides by its fixed batch size B, the same
  thing when the batch holds exactly s prompts);
* Top-k+: candidates ``V+ = {y : z_pub(y) >= z_pub^(k) - 2C}`` (``z_pub^(k)``
  the k-th largest public logit), a function of public data only;
* the token: exact exponential-mechanism draw from ``softmax(u_q / tau)`` on
  ``V+``, ``u_q`` = ``u`` rounded to the public grid ``token_grid(s, C)``.

Contract of one private token (derived here, compared with the paper in
``notes/errata-invisibleink.md`` and the chapter ``pp_invisibleink``):

* neighbouring relation: add/remove one sensitive prompt (record) of the
  batch, also 0 -> 1 prompts (an empty batch gives ``u = z_pub``);
* unit of privacy: one prompt (record);
* sensitivity: adding prompt ``i`` moves ``u`` by ``d_i / s`` with every
  component in ``[-C/s, C/s]``: sup-norm ``C/s``, plus the grid after rounding;
* measure and cost: an exponential mechanism whose score moves by a vector
  with all components in an interval of width ``2 (C/s + grid)`` is
  ``epsilon``-bounded range with ``epsilon = 2 (C/s + grid)/tau``, hence
  ``rho = epsilon^2 / 8 = ((C/s + grid)/tau)^2 / 2`` zCDP per private token;
* the Top-k+ choice reads ``z_pub`` only: it costs nothing;
* float arithmetic: ``u`` is formed in float64 before it is rounded, so two
  neighbours' ``u`` differ by ``d_i/s`` plus a few units in the last place of
  ``|u|`` (about 1e-14 for logits near 30); after rounding their difference can
  exceed ``C/s + grid`` by those units only: at most 1e-11 of ``epsilon`` for
  ``C/s >= 1e-3``. The contract does not add them (tests/test_privacy4_float_rounding.py
  measures the excess).

This is the formula of Theorem 1 of Amin et al. with ``c`` read as DClip's
norm ``C`` (:mod:`dpkit.privacy.private_prediction`): the two variants share
the accounting, what changes is how much of the logits a given ``C`` keeps.
The paper's own statement, ``rho = T C^2 / (2 B^2 tau^2)`` for ``T`` tokens
(:func:`paper_rho`), is ours with the grid set to 0 and ``s = B``.
"""

from __future__ import annotations

import math

from dpkit.privacy.contract import PrivacyContract
from dpkit.privacy.private_prediction import (UNIT, check_batch_size, guarantee_at_cap, private_token_contract,
                                              rho_at_cap, token_grid, token_rho, tokens_within)
from dpkit.privacy.zcdp import epsilon_to_zcdp
from dpkit.validate import ParameterError, check_int, check_positive

#: the private-prediction variants: the seed paper's (Amin et al., the default) and InvisibleInk
VARIANTS = ("amin", "invisibleink")
DEFAULT_VARIANT = "amin"
NAME = "invisibleink"


def check_variant(variant) -> str:
    """``variant`` if it names a private-prediction variant, else ParameterError naming the choices."""
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ParameterError("variant", variant, "must be one of " + ", ".join(repr(v) for v in VARIANTS)
                             + " ('amin': the seed paper's clip-and-recenter; 'invisibleink': DClip + Top-k+)")
    return variant


def dclip_sensitivity(clip: float, batch_size: float) -> float:
    """Sup-norm sensitivity ``C/s`` of ``u = z_pub + (1/s) sum_i clip(z_i - z_pub, -C, C)`` (add/remove)."""
    return check_positive("clip", clip) / check_batch_size(batch_size)


def topk_plus_margin(clip: float) -> float:
    """How far below the public k-th logit Top-k+ reaches: ``2C``.

    With at most ``s`` prompts in the batch every ``|u(y) - z_pub(y)| <= C``, so a
    token among the k largest ``u`` has ``z_pub(y) >= z_pub^(k) - 2C``: the set is a
    superset of the private top-k (exactly what the margin buys; privacy does not
    depend on it, the set being public).
    """
    return 2.0 * check_positive("clip", clip)


def invisibleink_token_contract(batch_size: float, clip: float, temperature: float) -> PrivacyContract:
    """Contract of one InvisibleInk token: bounded range at ``epsilon = 2 (C/s + grid)/tau``, the private token's
    (:func:`~dpkit.privacy.private_prediction.private_token_contract`, the one statement of it) with DClip's
    norm C in place of the logit clip c and its own mechanism, norm and kind."""
    token = private_token_contract(batch_size, clip, temperature)
    p = token.parameters
    return token.replace(
        mechanism="InvisibleInk token (exponential mechanism on public logits + DClip'd differences / s, "
                  "Top-k+ candidates)",
        sensitivity_norm="Linf of z_pub + (1/s) sum clip(z_i - z_pub, -C, C), quantized",
        kind="invisibleink_token",
        note=f"DClip norm C={p['c']:g}, batch size s={p['s']:g}, temperature tau={p['tau']:g}; exact sampling on "
             f"the grid {p['grid']:.3g}; the Top-k+ set reads the public logits only")


def invisibleink_per_token_rho(batch_size: float, clip: float, temperature: float,
                               svt_sigma: float | None = None) -> float:
    """zCDP cost of one private token, ``((C/s + grid)/tau)^2 / 2`` (plus its sparse-vector run, if any)."""
    return token_rho(invisibleink_token_contract(batch_size, clip, temperature), batch_size, svt_sigma)


def invisibleink_rho(tokens: int, batch_size: float, clip: float, temperature: float,
                     svt_sigma: float | None = None) -> float:
    """``r`` private tokens per batch compose sequentially; disjoint batches in parallel."""
    return rho_at_cap(tokens, invisibleink_per_token_rho(batch_size, clip, temperature, svt_sigma))


def invisibleink_contract(tokens: int, batch_size: float, clip: float, temperature: float,
                          svt_sigma: float | None = None) -> PrivacyContract:
    """Contract of a whole InvisibleInk run capped at ``tokens`` private tokens per batch."""
    rho = invisibleink_rho(tokens, batch_size, clip, temperature, svt_sigma)
    grid = token_grid(batch_size, clip)
    svt = "without SVT" if svt_sigma is None else f"SVT sigma={svt_sigma:g}"
    return PrivacyContract(
        mechanism="private prediction, InvisibleInk variant (DClip + Top-k+)", neighbouring="add/remove",
        unit=UNIT, measure="zcdp", sensitivity=clip / batch_size + grid, rho=rho,
        sensitivity_norm="Linf of the DClip aggregate", kind="private_prediction_invisibleink",
        parameters={"r": int(tokens), "s": float(batch_size), "c": float(clip), "tau": float(temperature),
                    "svt_sigma": None if svt_sigma is None else float(svt_sigma), "grid": grid},
        note=f"r={tokens} private tokens per batch, s={batch_size:g}, C={clip:g}, tau={temperature:g}, {svt}; "
             "batches assigned by a function of each prompt alone (parallel composition)")


def invisibleink_max_private_tokens(epsilon: float, delta: float, batch_size: float, clip: float,
                                    temperature: float, svt_sigma: float | None = None) -> int:
    """Largest integer r whose rho converts (tightly) to at most (epsilon, delta)."""
    return tokens_within(epsilon, delta, invisibleink_per_token_rho(batch_size, clip, temperature, svt_sigma))


def invisibleink_guarantee(tokens: int, delta: float, batch_size: float, clip: float, temperature: float,
                           svt_sigma: float | None = None) -> dict:
    """The run's guarantee at its cap (same keys as :func:`~dpkit.privacy.private_prediction_guarantee`)."""
    return {**guarantee_at_cap(tokens, delta, invisibleink_per_token_rho(batch_size, clip, temperature, svt_sigma)),
            "variant": NAME}


def paper_rho(tokens: int, clip: float, batch_size: float, temperature: float) -> float:
    """The paper's statement: ``T`` tokens cost ``rho = T C^2 / (2 B^2 tau^2)`` (no grid; B fixed)."""
    t = check_int("tokens", tokens, minimum=0)
    return t * check_positive("clip", clip) ** 2 / (
        2.0 * check_positive("batch_size", batch_size) ** 2 * check_positive("temperature", temperature) ** 2)


def calibrated_clip(epsilon: float, delta: float, batch_size: float, temperature: float, tokens: int) -> float:
    """The paper's recipe: the largest DClip norm C at which ``tokens`` private tokens fit (epsilon, delta).

    ``C = s tau sqrt(2 rho / T)`` with ``rho`` the zCDP budget of (epsilon, delta),
    then lowered until :func:`invisibleink_max_private_tokens` affords ``T`` (the grid
    adds about 2^-30 relative).
    """
    t = check_int("tokens", tokens, minimum=1)
    s = check_batch_size(batch_size)
    tau = check_positive("temperature", temperature)
    clip = s * tau * math.sqrt(2.0 * epsilon_to_zcdp(epsilon, delta) / t)
    while invisibleink_max_private_tokens(epsilon, delta, s, clip, tau) < t:
        clip *= 1 - 1e-9
    return clip
