"""The audit report of a run: privacy checklist, sensitivity re-checks, empirical audits, verdict.

Input: a run's saved :class:`~dpkit.privacy.PrivacyLedger` (JSON) and the run's
parameters. The checklist follows the reporting guidelines of
{cite}`ponomareva2023dpfy` (Section 5.3.3): DP setting, the instantiated
definition (data accesses covered, final output, unit of privacy, neighbouring
relation), accounting (type, assumptions, formal statement) and transparency.

Each ledger entry's stated sensitivity is re-derived here, independently of
the code that stated it (from the parameters printed in the contract, by a
formula and, where cheap, by brute force on constructed extreme inputs), and
the registered empirical audits of the entry's mechanism family are run at the
entry's epsilon. An audit can only find evidence *against* a claim: a passing
report means "no evidence of a violation", never a proof of privacy.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
from dp_accounting import dp_event, pld

from dpkit.audit.mechanism.adapters.dpsgd import DELTA as STEP_AUDIT_DELTA
from dpkit.audit.mechanism.registry import audit_row
from dpkit.dpst.mechanism import clipped_cosine
from dpkit.ft.accounting import dpsgd_epsilon
from dpkit.kps.rff import RandomFourierFeatures
from dpkit.kps.vocabulary import max_l1_change
from dpkit.privacy import PrivacyLedger
from dpkit.privacy.contract import KINDS, RUN_KINDS
from dpkit.privacy.gaussian import gaussian_delta
from dpkit.privacy.ledger import Charge
from dpkit.runs.layout import paths as run_folder_paths
from dpkit.validate import ParameterError

__all__ = ["SensitivityCheck", "recheck_sensitivity", "audit_names_for", "checklist", "verdict"]


@dataclass
class SensitivityCheck:
    """A stated sensitivity against an independent re-derivation (``agrees`` None: no rule)."""

    mechanism: str
    stated: float
    recomputed: float | None
    method: str
    agrees: bool | None

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "stated": self.stated, "recomputed": self.recomputed,
                "method": self.method, "agrees": self.agrees}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _params(contract: Mapping[str, Any]) -> Mapping[str, Any]:
    return contract.get("parameters") or {}


def _missing(contract: Mapping[str, Any], names) -> SensitivityCheck | None:
    absent = [n for n in names if _params(contract).get(n) is None]
    if absent:
        return SensitivityCheck(contract["mechanism"], contract["sensitivity"], None,
                                f"parameters {absent} not stated in the contract", None)
    return None


def _vocabulary(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["S"])) is not None:
        return gap
    S = int(_params(contract)["S"])
    # brute force: the L1 change when one of these documents is removed, one of them far longer than S
    docs = [list(range(3 * S)), [0, 1], list(range(S, 2 * S)) * 2, []]
    worst = max_l1_change(docs, 3 * S, S)
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], float(worst),
                            f"brute-force removal of each document (one holds {3 * S} terms), cap S={S}",
                            _close(worst, contract["sensitivity"]))


def _dpkde(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["I", "W"])) is not None:
        return gap
    I, W = int(_params(contract)["I"]), float(_params(contract)["W"])
    # every feature is sqrt(2) cos(.), so one document of total weight W moves each by at most sqrt(2) W;
    # rounding the I coordinates to the release grid adds at most I * grid
    rounding = I * float(_params(contract).get("grid") or 0.0) if _params(contract).get("dimension") else 0.0
    bound = math.sqrt(2.0) * I * W + rounding
    features = RandomFourierFeatures(16, 64, 1.0, np.random.default_rng(0))
    largest = float(np.abs(features.features(np.random.default_rng(1).normal(size=(2000, 16)) * 3)).max())
    ok = _close(bound, contract["sensitivity"]) and largest <= math.sqrt(2.0) + 1e-12
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], bound,
                            f"sqrt(2) * I * W + I * grid with I={I}, W={W:g}; largest |feature| seen {largest:.6f}",
                            ok)


def _private_token(contract: Mapping[str, Any]) -> SensitivityCheck:
    from dpkit.privpred.clipping import aggregate_logits, clip_and_recenter

    if (gap := _missing(contract, ["s", "c"])) is not None:
        return gap
    p = _params(contract)
    s, c = float(p["s"]), float(p["c"])
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(50):  # random batches plus an extreme added prompt: the averaged logits move by <= c/s
        batch = rng.normal(0, 5, size=(3, 20))
        extra = np.where(np.arange(20) == rng.integers(20), 0.0, -1e3)
        a = aggregate_logits(clip_and_recenter(batch, c), s)
        b = aggregate_logits(clip_and_recenter(np.vstack([batch, extra]), c), s)
        worst = max(worst, float(np.abs(b - a).max()))
    grid = float(p.get("grid") or 0.0)   # the exact sampler's quantization step adds to c/s
    ok = _close(c / s + grid, contract["sensitivity"]) and worst <= c / s + 1e-9
    method = f"c/s + grid with c={c:g}, s={s:g}, grid={grid:.3g}; largest change seen on extreme prompts {worst:.6g}"
    return _theorem_one(contract, ok, method)


def _invisibleink_token(contract: Mapping[str, Any]) -> SensitivityCheck:
    from dpkit.privpred.invisibleink import dclip_aggregate

    if (gap := _missing(contract, ["s", "c"])) is not None:
        return gap
    p = _params(contract)
    s, c = float(p["s"]), float(p["c"])
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(50):  # an added prompt at the corners of DClip's range: u moves by <= C/s in every coordinate
        public, batch = rng.normal(0, 5, size=20), rng.normal(0, 5, size=(3, 20))
        extra = np.where(np.arange(20) == rng.integers(20), public + 1e3, public - 1e3)
        a = dclip_aggregate(batch, public, c, s)
        b = dclip_aggregate(np.vstack([batch, extra]), public, c, s)
        worst = max(worst, float(np.abs(b - a).max()))
    grid = float(p.get("grid") or 0.0)
    ok = _close(c / s + grid, contract["sensitivity"]) and worst <= c / s + 1e-9
    method = (f"C/s + grid with DClip norm C={c:g}, s={s:g}, grid={grid:.3g}; largest change seen on extreme "
              f"prompts {worst:.6g}")
    return _theorem_one(contract, ok, method)


def _theorem_one(contract: Mapping[str, Any], ok: bool, method: str) -> SensitivityCheck:
    """A token check, plus the run's rho re-derived by Theorem 1 when the contract is a whole run (``r``)."""
    p = _params(contract)
    s, c, grid = float(p["s"]), float(p["c"]), float(p.get("grid") or 0.0)
    if p.get("r") is not None and p.get("tau"):
        r, tau, sigma = int(p["r"]), float(p["tau"]), p.get("svt_sigma")
        svt_step = 1.0 / s + float(p.get("svt_grid") or 0.0)
        rho = r * (((c / s + grid) / tau) ** 2 / 2 + (2.0 * (svt_step / sigma) ** 2 if sigma else 0.0))  # Thm 1
        # a contract that does not state the SVT's grid (InvisibleInk's) is compared to the grid's size, 1e-6
        tolerance = 1e-6 if sigma and "svt_grid" not in p else 1e-9
        ok = ok and math.isclose(rho, contract.get("rho") or -1.0, rel_tol=tolerance)
        method += f"; Theorem 1 rho re-derived: {rho:.6g}"
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], c / s + grid, method, ok)


def _noisy_top_k(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["k", "gumbel_scale"])) is not None or contract.get("epsilon") is None:
        return gap or SensitivityCheck(contract["mechanism"], contract["sensitivity"], None, "no epsilon", None)
    k, scale = int(_params(contract)["k"]), float(_params(contract)["gumbel_scale"])
    implied = contract["epsilon"] * scale / (2.0 * k)  # Gumbel scale 2 k Delta / epsilon
    rho = contract["epsilon"] ** 2 / (8.0 * k)        # k exponential mechanisms at epsilon / k
    ok = math.isclose(implied, contract["sensitivity"], rel_tol=1e-9) and _close(rho, contract.get("rho") or -1.0)
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], implied,
                            f"epsilon * gumbel_scale / (2k) with k={k}, gumbel_scale={scale:g}; "
                            f"rho = epsilon^2 / (8k) = {rho:.6g}", ok)


def _above_threshold(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["sigma"])) is not None or contract.get("epsilon") is None:
        return gap or SensitivityCheck(contract["mechanism"], contract["sensitivity"], None, "no epsilon", None)
    sigma = float(_params(contract)["sigma"])
    implied = contract["epsilon"] * sigma / 2.0  # epsilon = 2 Delta / sigma
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], implied,
                            f"epsilon * sigma / 2 with sigma={sigma:g} (L1 of an average of s distributions: 1/s)",
                            _close(implied, contract["sensitivity"]))


def _dpst(contract: Mapping[str, Any]) -> SensitivityCheck:
    rng = np.random.default_rng(0)
    u = clipped_cosine(rng.normal(size=(500, 8)), rng.normal(size=(50, 8)))
    spread = float(u.max() - u.min())
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], 1.0,
                            f"utility clip(cos, 0, 1) lies in [0, 1] (range seen {spread:.4f})",
                            _close(contract["sensitivity"], 1.0) and spread <= 1.0)


def _additive_noise(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["scale"])) is not None or contract.get("epsilon") is None:
        return gap or SensitivityCheck(contract["mechanism"], contract["sensitivity"], None, "no epsilon", None)
    scale = float(_params(contract)["scale"])
    implied = contract["epsilon"] * scale
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], implied,
                            f"epsilon * scale with scale={scale:g}",
                            math.isclose(implied, contract["sensitivity"], rel_tol=1e-4))


def _exponential(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["scale"])) is not None:
        return gap
    p = _params(contract)
    factor = 1.0 if p.get("monotone") else 2.0  # weights exp(u / scale), scale = factor * Delta / epsilon
    implied = contract["epsilon"] * float(p["scale"]) / factor
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], implied,
                            f"epsilon * scale / {factor:g} with scale={float(p['scale']):g}",
                            math.isclose(implied, contract["sensitivity"], rel_tol=1e-9))


def _gaussian(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["scale"])) is not None or not contract.get("epsilon"):
        return gap or SensitivityCheck(contract["mechanism"], contract["sensitivity"], None,
                                       "no (epsilon, delta) calibration stated", None)
    sigma = float(_params(contract)["scale"])
    reached = gaussian_delta(sigma, contract["sensitivity"], contract["epsilon"])
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], contract["sensitivity"],
                            f"exact delta of N(0, {sigma:.4g}^2) at the stated epsilon: {reached:.3g}",
                            reached <= contract.get("delta", 0.0) * (1 + 1e-6))


def _randomized_response(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["k", "keep"])) is not None or contract.get("epsilon") is None:
        return gap or SensitivityCheck(contract["mechanism"], contract["sensitivity"], None, "no epsilon", None)
    k, keep = int(_params(contract)["k"]), float(_params(contract)["keep"])
    # brute force over every pair of true labels: the largest log ratio of output probabilities
    table = np.full((k, k), (1.0 - keep) / max(k - 1, 1))
    np.fill_diagonal(table, keep)
    implied = float(np.max(np.abs(np.log(table[:, None, :]) - np.log(table[None, :, :])))) if k > 1 else 0.0
    ok = implied <= contract["epsilon"] * (1 + 1e-9) + 1e-12 and _close(contract["sensitivity"], 1.0)
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], 1.0,
                            f"one label changes; log-ratio of outputs over all {k}x{k} label pairs with "
                            f"keep={keep:.6g}: {implied:.6g} (stated epsilon {contract['epsilon']:.6g})", ok)


def _dpsgd(contract: Mapping[str, Any]) -> SensitivityCheck:
    if (gap := _missing(contract, ["noise_multiplier", "sample_rate", "steps", "clip_norm"])) is not None:
        return gap
    p = _params(contract)
    sigma, q, steps, clip = float(p["noise_multiplier"]), float(p["sample_rate"]), int(p["steps"]), float(p["clip_norm"])
    # independent accountant: dp_accounting's PLD of the subsampled Gaussian, composed over the steps
    accountant = pld.PLDAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    reached = float(accountant.get_epsilon(contract.get("delta") or 0.0))
    ok = _close(clip, contract["sensitivity"]) and reached <= (contract.get("epsilon") or 0.0) * (1 + 2e-2)
    return SensitivityCheck(contract["mechanism"], contract["sensitivity"], clip,
                            f"clipped gradient sum moves by <= C={clip:g} (L2); PLD epsilon of {steps} steps at "
                            f"q={q:g}, sigma={sigma:g}: {reached:.4g} (stated {contract.get('epsilon')})", ok)


#: contract kind (a row of dpkit.privacy.contract.KINDS, which names the family) -> (re-check, correct audits)
RULES: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "vocabulary_histogram": (_vocabulary, ("kps_vocabulary",)),
    "dpkde": (_dpkde, ("kps_dpkde",)),
    "private_token": (_private_token, ("pp_token",)),
    "private_prediction": (_private_token, ("pp_token",)),
    "invisibleink_token": (_invisibleink_token, ("ii_token_dclip", "ii_token_topk_plus")),
    "private_prediction_invisibleink": (_invisibleink_token, ("ii_token_dclip", "ii_token_topk_plus")),
    "above_threshold": (_above_threshold, ("pp_svt", "above_threshold")),
    "dpst_triple": (_dpst, ("dpst_triple", "dpst_neighbourhood")),
    "dpst_neighbourhood": (_dpst, ("dpst_triple", "dpst_neighbourhood", "dpst_no_triple")),
    "dpst_document": (_dpst, ("dpst_document", "dpst_no_triple")),
    "dpst_topic": (_randomized_response, ("dpst_topic",)),
    "randomized_response": (_randomized_response, ("dpst_label",)),
    "laplace": (_additive_noise, ("laplace",)),
    "exponential": (_exponential, ("exponential",)),
    "noisy_top_k": (_noisy_top_k, ()),
    "gaussian": (_gaussian, ("gaussian",)),
    "dpsgd": (_dpsgd, ("dpsgd_step",)),
}


def _rule(contract: Mapping[str, Any]):
    return RULES.get(contract.get("kind") or "")


def recheck_sensitivity(contract: Mapping[str, Any]) -> SensitivityCheck:
    """Re-derive the sensitivity a contract (as stored in a ledger) states, from its ``parameters``."""
    if "mechanism" not in contract or "sensitivity" not in contract:
        raise ParameterError("contract", contract, "must be a PrivacyContract.to_dict()")
    rule = _rule(contract)
    if rule is None:
        why = ("no independent re-derivation for this mechanism" if contract.get("kind") else
               "the contract states no kind and parameters (saved before contracts carried them)")
        return SensitivityCheck(contract["mechanism"], contract["sensitivity"], None, why, None)
    return rule[0](contract)


def audit_names_for(contract: Mapping[str, Any]) -> tuple[str, ...]:
    """The registered correct audits of the contract's mechanism family (may be empty)."""
    rule = _rule(contract)
    return () if rule is None else rule[1]


def family_of(contract: Mapping[str, Any]) -> str:
    kind = KINDS.get(contract.get("kind") or "")
    return "unknown" if kind is None else kind.family


def checklist(ledger_data: Mapping[str, Any], params: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """The reporting checklist of Ponomareva et al. (Sec. 5.3.3) for a saved ledger, as (item, answer) rows.

    ``params`` may state ``setting`` ("central"/"local"), ``output`` (what is
    released), ``tuning`` (how hyperparameters were chosen), ``delta`` and
    ``code`` (a version); what is missing is said to be missing, never guessed.
    """
    params = dict(params or {})
    ledger = PrivacyLedger.from_dict(dict(ledger_data))  # re-derives every cost from its contract
    entries = ledger.entries
    families = sorted({family_of(e.contract.to_dict()) for e in entries})
    local = any(f == "DP-ST" for f in families)
    setting = params.get("setting") or ("local DP: each document is privatized on its own" if local else
                                        "central DP: the curator running dpkit is trusted to run the mechanisms")
    accesses = "; ".join(
        f"{e.label} ({e.contract.mechanism}, {e.composition}"
        + (f" over {e.groups} disjoint groups" if e.parallel else f", {e.count} run(s)")
        + ")" for e in entries) or "none recorded"
    delta = params.get("delta", ledger.delta)
    measures = sorted({e.contract.measure for e in entries})
    if delta is not None:
        statement = (f"({ledger.epsilon(delta):.4g}, {delta:.3g})-DP under {ledger.neighbouring} of one "
                     f"{ledger.unit} (total rho = {ledger.rho:.6g})")
    else:
        statement = f"rho = {ledger.rho:.6g} zCDP under {ledger.neighbouring} of one {ledger.unit} (no delta given)"
    if set(measures) <= {"pure"}:
        statement += f"; also {ledger.pure_epsilon():.4g}-DP (pure) by basic composition"
    parallel = [e.label for e in entries if e.parallel]
    assumptions = ("parallel composition for " + ", ".join(parallel) +
                   ": each record's group must be a function of that record alone (hashing, or its label)"
                   ) if parallel else "sequential composition only; no sampling assumption"
    return [
        ("1. DP setting", setting),
        ("2a. Data accesses covered", accesses + ". " + params.get(
            "tuning", "Hyperparameter tuning is not accounted for (choose hyperparameters on public data).")),
        ("2b. Final mechanism output", params.get("output", "the releases listed in 2a and everything computed "
                                                  "from them alone (post-processing)")),
        ("2c. Unit of privacy", str(ledger.unit)),
        ("2d. Neighbouring relation", str(ledger.neighbouring)),
        ("3a. Type of accounting", "zCDP composition (pure eps -> eps^2/2, bounded range eps -> eps^2/8), "
                                   "converted to (eps, delta) with the tight conversion of Canonne, Kamath and "
                                   "Steinke; measures present: " + ", ".join(measures)),
        ("3b. Accounting assumptions", assumptions),
        ("3c. Formal DP statement", statement),
        ("4. Transparency and verifiability", params.get("code", "dpkit (this repository); every contract, "
                                                         "sensitivity and audit below is re-executed by this report")),
    ]


def verdict(sensitivity_checks: list[SensitivityCheck], audit_rows: list[Mapping[str, Any]],
            ledger_ok: bool = True) -> tuple[bool, str]:
    """A plain verdict: ``(ok, sentence)``."""
    wrong = [c.mechanism for c in sensitivity_checks if c.agrees is False]
    unchecked = [c.mechanism for c in sensitivity_checks if c.agrees is None]
    failed = [r["mechanism"] for r in audit_rows if not r["passed"]]
    problems = []
    if not ledger_ok:
        problems.append("the ledger does not re-derive (stored costs, or a total below dp_accounting's)")
    if wrong:
        problems.append("stated sensitivity not confirmed for " + ", ".join(sorted(set(wrong))))
    if failed:
        problems.append("empirical epsilon above the claim for " + ", ".join(failed))
    if problems:
        return False, "VIOLATION FOUND: " + "; ".join(problems) + "."
    text = (f"NO VIOLATION FOUND: the ledger re-derives, {len(sensitivity_checks) - len(unchecked)} stated "
            f"sensitivities were confirmed independently and all {len(audit_rows)} empirical audits gave lower "
            "bounds at or below the claimed epsilon. This is evidence, not proof: an audit can only refute a claim.")
    if unchecked:
        text += " Not re-derived (no rule): " + ", ".join(sorted(set(unchecked))) + "."
    return True, text


def audit_plan(contract: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(audit name, claimed epsilon) pairs for one ledger contract: its family's correct audits at the
    per-release epsilon; a private prediction run with SVT also audits the gate at 2/(s sigma)."""
    epsilon = audit_epsilon(contract)
    plan = [] if epsilon is None else [(name, epsilon) for name in audit_names_for(contract)]
    p = _params(contract)
    if contract.get("kind") in RUN_KINDS and p.get("s") and p.get("svt_sigma"):
        plan.append(("pp_svt", 2.0 / (float(p["s"]) * float(p["svt_sigma"]))))
    return plan


def audit_epsilon(contract: Mapping[str, Any]) -> float | None:
    """The per-release epsilon an empirical audit of this contract's mechanism should be built for."""
    if contract.get("measure") in ("pure", "bounded-range") and contract.get("epsilon"):
        return float(contract["epsilon"])
    p = _params(contract)
    if contract.get("kind") in RUN_KINDS and p.get("s") and p.get("c") and p.get("tau"):
        return 2.0 * float(p["c"]) / (float(p["s"]) * float(p["tau"]))  # one private token
    if contract.get("kind") == "dpsgd" and p.get("noise_multiplier") and p.get("sample_rate"):
        # one step of the run: the subsampled Gaussian at the run's sigma and q, at the step audit's delta
        return dpsgd_epsilon(float(p["noise_multiplier"]), float(p["sample_rate"]), 1, STEP_AUDIT_DELTA)
    return None


def run_audits(ledger_data: Mapping[str, Any], samples: int = 20_000, seed: int = 0,
               confidence: float = 0.95) -> list[dict]:
    """Every correct audit of every mechanism family in the ledger, at that entry's per-release epsilon."""
    rows, done = [], set()
    for entry in map(Charge.from_dict, ledger_data.get("entries", [])):
        for name, epsilon in audit_plan(entry.contract.to_dict()):
            if (name, epsilon) in done:
                continue
            done.add((name, epsilon))
            row = audit_row(name, samples, epsilon, seed, confidence)
            row["ledger entry"] = entry.label
            rows.append(row)
    return rows


def load_ledger_source(path) -> tuple[dict, dict]:
    """``(ledger_dict, params)`` from a saved ledger JSON, a run's ``manifest.json`` or a run folder: a
    :class:`dpkit.runs.Run` folder, or the folder ``dpkit synth --out DIR`` writes (its run is ``DIR/private``).

    From a run (:class:`dpkit.runs.Run`) the params are the manifest's ``params``
    plus its ``seed`` and package versions (for the transparency item).
    """
    path = Path(path)
    if path.is_dir():
        own, synth_run = path / "manifest.json", run_folder_paths(path)[2] / "manifest.json"
        path = own if own.is_file() or not synth_run.is_file() else synth_run
    if not path.is_file():
        raise ParameterError("ledger_path", str(path), "must be a ledger JSON, a run's manifest.json or a run folder")
    data = json.loads(path.read_text())
    if "entries" in data:
        return data, {}
    if "ledger" in data:
        if not data["ledger"]:
            raise ParameterError("ledger_path", str(path), "is a run manifest without a ledger (nothing was spent)")
        params = dict(data.get("params") or {})
        params.setdefault("code", f"dpkit run manifest {path}; seed {data.get('seed')}; "
                                  f"versions {data.get('versions')}")
        return data["ledger"], params
    raise ParameterError("ledger_path", str(path), "holds neither ledger entries nor a run manifest")
