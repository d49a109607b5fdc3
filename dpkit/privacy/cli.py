"""``dpkit account``: the accounting calculator for auditors (no code needed)::

    dpkit account zcdp --rho R --delta D [--json]
    dpkit account zcdp --epsilon E --delta D [--json]
    dpkit account private-prediction --tokens r --batch-size s --clip c --temperature tau
                                     [--svt-sigma sigma] --delta D [--json]
    dpkit account private-prediction --epsilon E --delta D --batch-size s --clip c
                                     --temperature tau [--svt-sigma sigma] [--json]

Exit status 2 (and a message naming the argument) for invalid arguments.
"""

from __future__ import annotations

import argparse
import json
import sys

from dpkit.privacy.private_prediction import (BATCH_SIZE_RULE, check_batch_size, max_private_tokens,
                                              private_prediction_guarantee, token_grid)
from dpkit.privacy.zcdp import epsilon_to_zcdp, zcdp_to_epsilon, zcdp_to_epsilon_bun_steinke
from dpkit.validate import ParameterError, check_int, check_positive, check_probability

_FLAGS = {"svt_sigma": "--svt-sigma", "batch_size": "--batch-size",
          "clip/(expected_batch_size*temperature)": "--clip/(--batch-size*--temperature)",
          "1/(expected_batch_size*svt_sigma)": "1/(--batch-size*--svt-sigma)"}


def register(subparsers) -> None:
    account = subparsers.add_parser(
        "account", help="privacy accounting calculator (zCDP conversions, private prediction)",
        description="Convert zCDP to (epsilon, delta) and back, and account private prediction (Theorem 1 of "
                    "Amin et al.). Conversions: tight (Canonne, Kamath & Steinke 2020) and Bun-Steinke.")
    kinds = account.add_subparsers(dest="account_kind", required=True)

    z = kinds.add_parser("zcdp", help="rho -> epsilon (tight and Bun-Steinke), or epsilon -> largest rho")
    mode = z.add_mutually_exclusive_group(required=True)
    mode.add_argument("--rho", type=float, help="zCDP parameter rho >= 0")
    mode.add_argument("--epsilon", type=float, help="target epsilon > 0 (prints the largest rho)")
    z.add_argument("--delta", type=float, required=True, help="delta in (0, 1)")
    z.add_argument("--json", action="store_true", help="print one JSON object")
    z.set_defaults(func=_zcdp_command)

    pp = kinds.add_parser("private-prediction",
                          help="rho and epsilon of r private tokens, or the largest r for a target epsilon")
    mode = pp.add_mutually_exclusive_group(required=True)
    mode.add_argument("--tokens", type=int, help="r: cap on private tokens per batch (>= 0)")
    mode.add_argument("--epsilon", type=float, help="target epsilon > 0 (prints the largest r)")
    pp.add_argument("--batch-size", type=float, required=True, help=f"expected batch size {BATCH_SIZE_RULE}")
    pp.add_argument("--clip", type=float, required=True, help="logit clip c > 0")
    pp.add_argument("--temperature", type=float, required=True, help="sampling temperature tau > 0")
    pp.add_argument("--svt-sigma", type=float, default=None, help="sparse-vector noise sigma > 0 (omit: no SVT)")
    pp.add_argument("--delta", type=float, required=True, help="delta in (0, 1)")
    pp.add_argument("--json", action="store_true", help="print one JSON object")
    pp.set_defaults(func=_private_prediction_command)


def _fail(error: ParameterError) -> int:
    flag = _FLAGS.get(error.name, "--" + error.name.replace("_", "-"))
    print(f"dpkit account: error: argument {flag}: {error}", file=sys.stderr)
    return 2


def _emit(result: dict, as_json: bool, lines: list[str]) -> int:
    if as_json:
        print(json.dumps(result, sort_keys=True))
    else:
        print("\n".join(lines))
    return 0


def _zcdp_command(args: argparse.Namespace) -> int:
    try:
        delta = check_probability("delta", args.delta)
        if args.rho is not None:
            rho = check_positive("rho", args.rho, allow_zero=True)
            eps = zcdp_to_epsilon(rho, delta)
            bs = zcdp_to_epsilon_bun_steinke(rho, delta)
            result = {"rho": rho, "delta": delta, "epsilon": eps, "epsilon_bun_steinke": bs}
            lines = [f"rho-zCDP with rho = {rho:.6g} implies (epsilon, delta)-DP at delta = {delta:.3g} with",
                     f"  epsilon = {eps:.6g}  (tight: Canonne, Kamath & Steinke 2020)",
                     f"  epsilon = {bs:.6g}  (Bun & Steinke 2016: rho + 2 sqrt(rho log(1/delta)))"]
        else:
            target = check_positive("epsilon", args.epsilon)
            rho = epsilon_to_zcdp(target, delta)
            eps = zcdp_to_epsilon(rho, delta)
            result = {"rho": rho, "delta": delta, "epsilon": eps, "epsilon_target": target,
                      "epsilon_bun_steinke": zcdp_to_epsilon_bun_steinke(rho, delta)}
            lines = [f"largest rho with (epsilon = {target:.6g}, delta = {delta:.3g})-DP by the tight conversion:",
                     f"  rho = {rho:.6g}  (converts back to epsilon = {eps:.6g})"]
    except ParameterError as error:
        return _fail(error)
    return _emit(result, args.json, lines)


def _private_prediction_command(args: argparse.Namespace) -> int:
    try:
        delta = check_probability("delta", args.delta)
        s = check_batch_size(args.batch_size)
        c = check_positive("clip", args.clip)
        tau = check_positive("temperature", args.temperature)
        sigma = None if args.svt_sigma is None else check_positive("svt_sigma", args.svt_sigma)
        if args.tokens is not None:
            tokens = check_int("tokens", args.tokens, minimum=0)
            target = None
        else:
            target = check_positive("epsilon", args.epsilon)
            tokens = max_private_tokens(target, delta, s, c, tau, sigma)
        guarantee = private_prediction_guarantee(tokens, delta, s, c, tau, sigma)
    except ParameterError as error:
        return _fail(error)
    rho, eps, bs, unit = (guarantee["rho"], guarantee["epsilon"], guarantee["epsilon_bun_steinke"],
                          guarantee["rho_per_token"])
    result = {"tokens": tokens, "rho": rho, "delta": delta, "epsilon": eps, "epsilon_bun_steinke": bs,
              "rho_per_token": unit, "batch_size": s, "clip": c, "temperature": tau, "svt_sigma": sigma,
              "grid": token_grid(s, c)}
    svt = "no sparse vector" if sigma is None else f"sparse vector sigma = {sigma:g}"
    lines = [f"private prediction (Theorem 1, Amin et al.): s = {s:g}, c = {c:g}, tau = {tau:g}, {svt}",
             f"  logits quantized to the grid {result['grid']:.3g} (adds it to the sensitivity c/s)",
             f"  rho per private token = {unit:.6g}"]
    if target is not None:
        result["epsilon_target"] = target
        lines.append(f"  largest r with epsilon <= {target:.6g} at delta = {delta:.3g}: r = {tokens}")
    lines += [f"  r = {tokens} private tokens per batch: rho = {rho:.6g}",
              f"  epsilon = {eps:.6g} at delta = {delta:.3g} (tight)",
              f"  epsilon = {bs:.6g} at delta = {delta:.3g} (Bun-Steinke)",
              "  neighbouring: add/remove one prompt; batches must be assigned by a function of each prompt alone"]
    return _emit(result, args.json, lines)
