"""``dpkit synth pp`` on a GPU: wall time at default sizes, reproducibility, and GPU/CPU ratio in one run.

Private prediction is the method that reads the model's next-token distributions for every
private prompt, so it is the one a GPU speeds up most. This script runs, on whatever machine
it is started on (meant for a CUDA machine; ``--runtime torch`` makes dpkit load the bundled
SmolLM2 through PyTorch, which puts it on the GPU in bfloat16 when CUDA is available):

1. the bundled model's conversion from GGUF to a safetensors folder (timed);
2. ``dpkit synth pp`` at the method's default sizes, seeded, twice: wall time of each and
   whether the two releases are byte for byte the same (a seeded run is for teaching and
   tests; its report says it is not a DP release);
3. once more without ``--seed``: a DP release (noise from fresh OS entropy), wall time;
4. a small run (``--set n_batches=1``) on the GPU and then on the CPU of the same machine
   (``CUDA_VISIBLE_DEVICES=``), so the printed GPU/CPU ratio comes from one run.

Writes ``gpu_synth.json`` (provenance: commit, machine, GPU, package versions, input size,
per-step wall times) and the releases' texts to ``--out``.

Run: ``python benchmarks/gpu_synth.py --input rows.csv --out DIR [--commit SHA] [--skip-cpu]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path


def synth(csv_path: Path, out: Path, *, seed: int | None, extra: list[str], env: dict, timeout: float) -> dict:
    """One ``dpkit synth pp`` run as a user types it; its wall time, status and release."""
    command = [sys.executable, "-m", "dpkit", "synth", "pp", "--input", str(csv_path), "--text-column", "text",
               "--label-column", "label", "--epsilon", "8", "--document-type", "health news tweet",
               "--runtime", "torch", "--out", str(out), *extra]
    if seed is not None:
        command += ["--seed", str(seed)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
        status, tail = proc.returncode, (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    except subprocess.TimeoutExpired:
        status, tail = "timeout", [f"stopped after {timeout:.0f} s"]
    wall = time.perf_counter() - start
    release = out / "release" / "synthetic.jsonl"
    texts = [json.loads(line) for line in release.read_text().splitlines() if line.strip()] if release.exists() else []
    return {"status": status, "wall_s": round(wall, 2), "released": len(texts), "tail": tail,
            "release_bytes": release.read_bytes() if release.exists() else b""}


def versions() -> dict:
    from importlib import metadata

    found = {}
    for name in ("torch", "transformers", "tokenizers", "numpy", "gguf"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--commit", default=os.environ.get("DPKIT_COMMIT", "unknown"))
    parser.add_argument("--skip-cpu", action="store_true", help="leave out the CPU half of the ratio")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per dpkit run")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "dpkit-gpu-synth"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    import torch
    from dpkit.models.lm import prepare_bundled_lm

    report = {"commit": args.commit, "machine": platform.node(), "cpu_count": os.cpu_count(),
              "python": platform.python_version(), "versions": versions(),
              "cuda": torch.cuda.is_available(),
              "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
              "input_rows": sum(1 for _ in args.input.open()) - 1, "epsilon": 8, "method": "pp",
              "sizes": "the method's defaults", "steps": {}}
    start = time.perf_counter()
    prepare_bundled_lm()
    report["steps"]["convert_gguf_s"] = round(time.perf_counter() - start, 2)
    print(json.dumps({k: v for k, v in report.items() if k != "steps"}), flush=True)

    env = dict(os.environ)
    runs = {}
    for name, seed, extra, run_env in (("seeded_1", 0, [], env), ("seeded_2", 0, [], env),
                                       ("release", None, [], env),
                                       ("small_gpu", 0, ["--set", "n_batches=1"], env),
                                       ("small_cpu", 0, ["--set", "n_batches=1"], {**env, "CUDA_VISIBLE_DEVICES": ""})):
        if name == "small_cpu" and args.skip_cpu:
            continue
        runs[name] = synth(args.input, work / name, seed=seed, extra=extra, env=run_env, timeout=args.timeout)
        print(name, {k: v for k, v in runs[name].items() if k != "release_bytes"}, flush=True)

    for name in ("seeded_1", "release"):
        if runs[name]["release_bytes"]:
            (args.out / f"{name}_synthetic.jsonl").write_bytes(runs[name]["release_bytes"])
    report["seeded_releases_identical"] = (runs["seeded_1"]["release_bytes"] == runs["seeded_2"]["release_bytes"]
                                          and bool(runs["seeded_1"]["release_bytes"]))
    if "small_cpu" in runs and runs["small_cpu"]["status"] == 0 and runs["small_gpu"]["status"] == 0:
        report["small_cpu_over_gpu"] = round(runs["small_cpu"]["wall_s"] / runs["small_gpu"]["wall_s"], 2)
        report["small_gpu_and_cpu_same_texts"] = runs["small_cpu"]["release_bytes"] == runs["small_gpu"]["release_bytes"]
    report["runs"] = {name: {k: v for k, v in run.items() if k != "release_bytes"} for name, run in runs.items()}
    (args.out / "gpu_synth.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=1))
    return report


if __name__ == "__main__":
    main()
