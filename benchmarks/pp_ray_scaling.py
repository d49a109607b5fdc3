"""Private prediction on Ray: throughput with 1 and 2 workers on the smoke sample, and peak memory per worker.

One local Ray cluster (``--cpus``, default 2) serves both runs. For each number
of workers the actors are started and load the bundled model first (start-up is
timed separately and left out of the throughput); then the same release -- the
smoke sample's first 48 rows, ``--batches`` batches per label, the pp smoke
configuration with ``--tokens`` new tokens at ``--epsilon`` (default 16, so
that the private-token cap lets texts reach ``--tokens``), seed 0 -- is decoded. Printed per
row: wall seconds, batches/s, released tokens/s, each worker's peak resident
memory; then the ratio of the 2-worker to the 1-worker throughput, and whether
the two releases are identical (they must be: batch ``b`` always draws from
its own seed node). The local executor in this process (one torch thread, like
each worker) gives the baseline row.

On a machine with C free cores the ideal ratio is min(2, C); Ray adds the
round trip of each batch through its object store, and each worker holds its
own copy of the model.

Run: ``python benchmarks/pp_ray_scaling.py [--batches 3] [--tokens 16] [--epsilon 16] [--cpus 2]``.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time


def _release(lm, executor, batches: int, tokens: int, epsilon: float):
    from dpkit.data.tables import label_set, read_table
    from dpkit.methods import pp
    from dpkit.privpred import generate_synthetic

    table = read_table("data/own_data_sample.csv", "text", "label", limit=pp.SMOKE_ROWS)
    names = label_set(table.labels, None)
    labels = [names.index(y) for y in table.labels]
    config = pp.Config.smoke(epsilon, n_batches=batches, max_new_tokens=tokens)
    start = time.perf_counter()
    result = generate_synthetic(list(table.texts), pp.generic_template(True), config, labels=labels,
                                label_names=names, n_batches=batches, model=lm, seed=0, executor=executor)
    return result, time.perf_counter() - start


def _row(name: str, result, seconds: float, rss: list[float]) -> float:
    n = result.stats["batches"]
    tokens = result.stats["private_tokens"] + result.stats["public_tokens"]
    memory = ", ".join(f"{x:.0f}" for x in rss)
    print(f"{name:<16} {n:>7d} {seconds:>8.2f} {n / seconds:>10.3f} {tokens / seconds:>9.1f}   {memory}")
    return n / seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=3, help="batches per label (3 labels)")
    parser.add_argument("--tokens", type=int, default=16, help="max new tokens per synthetic text")
    parser.add_argument("--epsilon", type=float, default=16.0, help="target epsilon (16: a private-token cap "
                        "of 26 per batch, so that texts reach --tokens)")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    args = parser.parse_args(argv)

    import ray

    from dpkit import runtime
    from dpkit.models import load_lm
    from dpkit.privpred.executors import LocalExecutor
    from dpkit.privpred.ray_executor import RayExecutor

    runtime.setup(1)
    lm = load_lm()
    start = time.perf_counter()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             _temp_dir=tempfile.mkdtemp(prefix="dpkit-ray-"))
    print(f"Ray {ray.__version__}: local cluster with {args.cpus} CPUs started in "
          f"{time.perf_counter() - start:.1f} s; {args.batches} batches x 3 labels, {args.tokens} new tokens, epsilon={args.epsilon:g}")
    print(f"{'executor':<16} {'batches':>7} {'seconds':>8} {'batches/s':>10} {'tokens/s':>9}   peak RSS per "
          "worker (MiB)")
    local, seconds = _release(lm, LocalExecutor(), args.batches, args.tokens, args.epsilon)
    _row("local (1 thread)", local, seconds, [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024])
    throughput, texts = {}, {}
    for workers in (1, 2):
        with RayExecutor(workers=workers) as executor:
            start = time.perf_counter()
            executor.start(lm)
            startup = time.perf_counter() - start
            result, seconds = _release(lm, executor, args.batches, args.tokens, args.epsilon)
            throughput[workers] = _row(f"ray, {workers} worker{'s' if workers > 1 else ''}", result, seconds,
                                       executor.peak_rss_mb())
            print(f"{'':<16} (start-up: {startup:.1f} s until every worker had loaded the model)")
            texts[workers] = [e.text for e in result.examples]
    ray.shutdown()
    print(f"throughput ratio, 2 workers / 1 worker: {throughput[2] / throughput[1]:.2f}")
    print(f"releases identical (1 worker, 2 workers, local): {texts[1] == texts[2] == [e.text for e in local.examples]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
