"""How fast DP fine-tuning runs: seconds per epoch, seconds per generated text and peak memory, in one run.

The same code paths as ``dpkit synth ft`` (:mod:`dpkit.methods.ft`), timed phase by
phase on the bundled SmolLM2-135M: the noise calibration, the frozen lower
layers (once per record), the DP-SGD steps, and the sampling of ``--texts``
texts from the trained adapters. Rows come from a bundled labelled data set
(``--dataset``, its training split, the first ``--rows``); the configuration is
the method's default at ``--epsilon``, changed by ``--set key=value``.

Printed: wall and CPU seconds of each phase, seconds per epoch (one epoch is
1/q steps), seconds per generated text, and the process's peak resident memory
(``ru_maxrss``). On a loaded machine the wall time grows and the CPU time does
not: both are printed. A GPU is not used by default (``--device cuda`` to try).

Run: ``.venv/bin/python benchmarks/ft_speed.py [--dataset rotten_tomatoes] [--rows 1000] [--texts 1000]
[--epsilon 8] [--set steps=12] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class Clock:
    def __init__(self):
        self.rows = {}

    def __call__(self, name):
        clock = self

        class _Phase:
            def __enter__(self):
                self.wall, self.cpu = time.perf_counter(), time.process_time()

            def __exit__(self, *exc):
                clock.rows[name] = (time.perf_counter() - self.wall, time.process_time() - self.cpu)
        return _Phase()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="rotten_tomatoes")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import numpy as np
    import torch

    from dpkit.data.registry import load_dataset
    from dpkit.ft.adapters import AdapterLM, parse_modules, prefix_text
    from dpkit.ft.dpsgd import StepPlan, train
    from dpkit.methods import ft
    from dpkit.methods.settings import overrides
    from dpkit.models.lm import load_lm

    config = ft.Config(epsilon=args.epsilon, **overrides(ft.Config, "ft", args.set))
    data = load_dataset(args.dataset, seed=0)
    texts = [t[: config.max_chars] for t in data.train_texts[: args.rows]]
    labels = list(data.train_labels[: args.rows])
    names = list(data.label_names)
    clock = Clock()
    with clock("load model"):
        lm = load_lm(device=args.device)
    with clock("calibrate noise"):
        mechanism = config.mechanism()
    prefixes = [prefix_text(config.document_type, n) for n in names]
    torch.manual_seed(0)
    adapter = AdapterLM(lm.model, lm.tokenizer, adapter_layers=config.adapter_layers,
                        modules=parse_modules(config.lora_modules), rank=config.lora_rank, alpha=config.lora_alpha,
                        bf16=config.bf16, max_text_tokens=config.max_text_tokens)
    with clock("lower layers (once per record)"):
        encoded = adapter.encode(texts, [prefixes[y] for y in labels])
        states = adapter.lower_states(encoded, batch_size=config.micro_batch)
    plan = StepPlan(config.sample_rate, config.steps, mechanism.noise_multiplier, config.clip_norm,
                    config.expected_batch_size, config.learning_rate, config.micro_batch, config.checkpoint_steps())
    with clock("DP-SGD steps"):
        train(adapter.top, states, encoded.ids[:, 1:], encoded.weights, plan, np.random.SeedSequence())
    del states
    per_label = -(-args.texts // len(names))
    out_texts = []
    with clock("sampling"):
        model = adapter.merged_model()
        for c, prefix in enumerate(prefixes):
            for start in range(0, per_label, config.generate_batch):
                n = min(config.generate_batch, per_label - start)
                out_texts += adapter.sample(model, prefix, n, seed=1000 * c + start,
                                            temperature=config.temperature, top_p=config.top_p)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    epochs = config.sample_rate * config.steps
    train_wall, train_cpu = clock.rows["DP-SGD steps"]
    sample_wall, sample_cpu = clock.rows["sampling"]
    tokens = int(encoded.lengths.sum())
    result = {
        "dataset": args.dataset, "rows": len(texts), "tokens": tokens, "texts": len(out_texts),
        "epsilon": args.epsilon, "noise_multiplier": mechanism.noise_multiplier, "config": ft.config_dict(config),
        "phases": {k: {"wall_s": round(w, 2), "cpu_s": round(c, 2)} for k, (w, c) in clock.rows.items()},
        "seconds_per_epoch": round(train_wall / epochs, 2), "cpu_seconds_per_epoch": round(train_cpu / epochs, 2),
        "seconds_per_text": round(sample_wall / max(1, len(out_texts)), 4),
        "cpu_seconds_per_text": round(sample_cpu / max(1, len(out_texts)), 4),
        "total_wall_s": round(sum(w for w, _ in clock.rows.values()), 1),
        "peak_memory_mb": round(peak_mb), "torch_threads": torch.get_num_threads(),
    }
    for k, (w, c) in clock.rows.items():
        print(f"{k:<34} {w:8.1f} s wall {c:8.1f} s cpu")
    print(f"seconds per epoch   {result['seconds_per_epoch']} (cpu {result['cpu_seconds_per_epoch']}); "
          f"{epochs:g} epochs, {config.steps} steps at q={config.sample_rate:g}, sigma={mechanism.noise_multiplier:.4g}")
    print(f"seconds per text    {result['seconds_per_text']} (cpu {result['cpu_seconds_per_text']}); "
          f"{len(out_texts)} texts")
    print(f"peak memory         {result['peak_memory_mb']} MB; total {result['total_wall_s']} s wall")
    for text in out_texts[:: max(1, len(out_texts) // 10)][:10]:
        print("  |", text.replace("\n", " ")[:150])
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
