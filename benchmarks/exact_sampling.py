"""Speed of the exact samplers against the textbook float ones they replace in releases.

Prints microseconds per draw (median of repeats, wall and process CPU time):

* one private token over a vocabulary of ``--vocab`` logits (49,152 for SmolLM2):
  ``exact_exponential_sample`` on logits quantized to ``token_grid(s, c)`` vs
  float Gumbel-max (``gumbel_max_sample``);
* per coordinate: exact discrete Laplace vs numpy's float Laplace, exact
  discrete Gaussian vs numpy's float normal.

Run: ``python benchmarks/exact_sampling.py [--vocab 49152] [--repeats 200] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dpkit.privacy import (discrete_gaussian, discrete_laplace, exact_exponential_sample, gumbel_max_sample,
                           token_grid)


def per_call(fn, repeats: int) -> dict:
    """Median wall and CPU microseconds of ``fn()`` over ``repeats`` calls (after one warm-up)."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return {"wall_us": 1e6 * float(np.median(wall)), "cpu_us": 1e6 * float(np.median(cpu))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=49_152)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    s, c, tau = 16.0, 2.0, 1.0
    zbar = np.clip(rng.normal(0, 3, size=(32, args.vocab)), -c, c).sum(0) / s   # averaged clipped logits
    grid = token_grid(s, c)
    n = 100_000
    results = {
        "private_token_exact": per_call(lambda: exact_exponential_sample(zbar, tau, rng, grid), args.repeats),
        "private_token_gumbel_float": per_call(lambda: gumbel_max_sample(zbar / tau, rng), args.repeats),
        "discrete_laplace_per_draw": {k: v / n for k, v in
                                      per_call(lambda: discrete_laplace(3.7, rng, size=n), 5).items()},
        "float_laplace_per_draw": {k: v / n for k, v in per_call(lambda: rng.laplace(0, 3.7, n), 5).items()},
        "discrete_gaussian_per_draw": {k: v / n for k, v in
                                       per_call(lambda: discrete_gaussian(3.7, rng, size=n), 5).items()},
        "float_gaussian_per_draw": {k: v / n for k, v in per_call(lambda: rng.normal(0, 3.7, n), 5).items()},
    }
    for name, r in results.items():
        print(f"{name:28s} wall {r['wall_us']:10.3f} us   cpu {r['cpu_us']:10.3f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"vocab": args.vocab, **results}, f, indent=2)


if __name__ == "__main__":
    main()
