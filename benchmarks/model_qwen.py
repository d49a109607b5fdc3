"""The optional Qwen2.5-Coder-1.5B-Instruct against the bundled SmolLM2-135M, both on llama.cpp, in one run.

Prints, with the 1-minute load average beside every figure:

* speed: tokens/s of greedy generation at batch 1 and batch 8 (``--tokens`` new
  tokens per row, end tokens suppressed so both models do the same work, prefill
  included), repetitions interleaved model by model, and the ratio Qwen / SmolLM2
  per repetition (median);
* private decoding: seconds per released token of ``dpkit.privpred.decode_batch``
  at s = 8 (every token private, every private row cached), the ratio likewise;
* refusals and echoes: for the prompts the two LLM-based methods send at
  generation time -- DP-KPS's keyphrase prompt (with public words as keyphrases)
  and the class-only prompt, for the two bundled comparison data sets -- the share
  of completions (sampled at temperature 0.7, ``--samples`` per prompt kind) that
  refuse or speak as an assistant (:data:`REFUSAL`), and the share that only list
  the keyphrases back; one example text per model and prompt kind.

Utility is measured by ``dpkit experiment compare --preset model-probe`` with and
without ``--model qwen2.5-coder-1.5b`` (see docs/qwen.md), not here.

Needs the model's packages: ``make model-qwen``.

Run: ``python benchmarks/model_qwen.py [--reps 2] [--tokens 48] [--samples 16] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from runtime_llamacpp import llama_generate, private_prompts, private_step, review_prompts  # noqa: E402

#: A completion that refuses, apologizes or talks about itself as an assistant.
REFUSAL = re.compile(r"\b(I'?m sorry|I apologi[sz]e|I can(?:no|')t|I am unable|I'?m unable|as an AI|"
                     r"I'?m (?:a|an) (?:helpful )?(?:AI|assistant|language model)|I am (?:a|an) (?:AI|assistant)|"
                     r"AI (?:assistant|language model))", re.IGNORECASE)

KEYPHRASES = {
    "health news tweet": ["vaccine", "children", "study", "flu season", "hospital", "obesity"],
    "one-sentence movie review": ["plot", "actor", "boring", "soundtrack", "ending", "director"],
}
CLASSES = {"health news tweet": ["nytimeshealth", "goodhealth"],
           "one-sentence movie review": ["negative", "positive"]}


def load() -> float:
    return round(os.getloadavg()[0], 2)


def prompts() -> dict[str, list[str]]:
    """Plain-text copies of the prompts DP-KPS and the class-only baseline send (public words only)."""
    from dpkit.kps.prompts import CLASS_TEMPLATE, DEFAULT_TEMPLATE

    out = {}
    for doc, words in KEYPHRASES.items():
        out[f"keyphrases / {doc}"] = [str(DEFAULT_TEMPLATE).format(document_type=doc, keyphrases=", ".join(words))]
        out[f"class only / {doc}"] = [str(CLASS_TEMPLATE).format(document_type=doc, class_name=c)
                                      for c in CLASSES[doc]]
    return out


def only_keyphrases(text: str, words: list[str]) -> bool:
    """The completion is little more than the keyphrases listed back (at most 3 other words)."""
    rest = text.lower()
    for word in words:
        rest = rest.replace(word, " ")
    return len(re.findall(r"[a-z]+", rest)) <= 3


def behaviour(llm, samples: int, seed: int = 0) -> dict:
    rows = {}
    for kind, texts in prompts().items():
        batch = [texts[i % len(texts)] for i in range(samples)]
        outs = llm.generate(batch, max_new_tokens=48, temperature=0.7, seed=seed)
        words = KEYPHRASES[kind.split(" / ")[1]] if kind.startswith("keyphrases") else []
        rows[kind] = {"refusal_share": float(np.mean([bool(REFUSAL.search(o)) for o in outs])),
                      "echo_share": float(np.mean([only_keyphrases(o, words) for o in outs])) if words else None,
                      "empty_share": float(np.mean([not o.strip() for o in outs])),
                      "example": outs[0][:240]}
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--pp-tokens", type=int, default=16)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    from dpkit import runtime
    from dpkit.models.llamacpp import load_llamacpp
    from dpkit.models.named import QWEN_DISPLAY, resolve_model
    from dpkit.privpred.llamacpp_engine import load_private_llamacpp
    from dpkit.validate import ParameterError

    runtime.setup()
    try:
        qwen_path = resolve_model("qwen2.5-coder-1.5b", "model")
    except ParameterError as exc:  # the optional model is not installed: nothing to compare (make benchmarks goes on)
        print(f"skipped: {exc}")
        return 0
    models = {"SmolLM2-135M": (None, load_llamacpp(None)), QWEN_DISPLAY: (qwen_path, load_llamacpp(qwen_path))}
    private, public = private_prompts(8)
    speed = {name: {"b1": [], "b8": [], "pp_s8": []} for name in models}
    loads = []
    for rep in range(args.reps):
        for name, (spec, llm) in models.items():
            loads.append(load())
            speed[name]["b1"].append(args.tokens / llama_generate(llm, review_prompts(1), args.tokens, None))
            speed[name]["b8"].append(8 * args.tokens / llama_generate(llm, review_prompts(8), args.tokens, None))
            plm = load_private_llamacpp(spec)
            speed[name]["pp_s8"].append(private_step(plm, private, public, args.pp_tokens))
            print(f"rep {rep} {name}: batch 1 {speed[name]['b1'][-1]:.1f} tok/s, batch 8 {speed[name]['b8'][-1]:.1f} "
                  f"tok/s, private decoding s=8 {speed[name]['pp_s8'][-1] * 1000:.0f} ms/token (load {load()})",
                  flush=True)
    small, big = "SmolLM2-135M", QWEN_DISPLAY
    ratios = {k: statistics.median(b / s for b, s in zip(speed[big][k], speed[small][k])) for k in ("b1", "b8")}
    ratios["pp_s8_slowdown"] = statistics.median(b / s for b, s in zip(speed[big]["pp_s8"], speed[small]["pp_s8"]))
    print(f"\nQwen / SmolLM2 throughput (median over {args.reps} interleaved reps): batch 1 {ratios['b1']:.2f}x, "
          f"batch 8 {ratios['b8']:.2f}x; private decoding at s=8 takes {ratios['pp_s8_slowdown']:.2f}x as long "
          f"per token (loads {min(loads)}-{max(loads)})")
    behaviours = {}
    for name, (_, llm) in models.items():
        behaviours[name] = behaviour(llm, args.samples)
        print(f"\n== {name}: refusals and echoes over {args.samples} samples per prompt kind")
        for kind, row in behaviours[name].items():
            echo = "-" if row["echo_share"] is None else f"{row['echo_share']:.2f}"
            print(f"  {kind:38s} refusal {row['refusal_share']:.2f}  keyphrases only {echo}  "
                  f"empty {row['empty_share']:.2f}\n      e.g. {row['example']!r}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"speed": speed, "ratios": ratios, "behaviour": behaviours, "loads": loads,
                       "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
