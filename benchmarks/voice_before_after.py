"""Issue 33's targets before and after the voice rules: the same cells made by old and new code, one measure.

After: ``dpkit experiment compare --preset PRESET`` (today's code; ``results/compare/PRESET``).
Before: the same preset's cells made by the last commit before the voice rules (``--commit``,
default 9f2858c), which neither stored texts nor measured them. ``--preset`` is ``infinity``
(the two comparison data sets with the noise off) or ``holdout-situations`` (the held-out
everyday situations at epsilon 8; the old commit has no loader for them, so today's
``dpkit/data`` replaces its own: the same split as today's cells). This script

1. extracts that commit with ``git archive`` into a scratch folder and makes small edits
   there: its cells return their texts and its sweep stores them, and it gets the preset
   (the same data sets, epsilon, seeds and sizes; DP-ST as its comparison released it then,
   the privatized triples joined without the LLM rewrite);
2. runs ``python -m dpkit experiment compare --preset infinity`` there (its own code, this
   virtual environment), unless ``--from-cells`` names a folder such a run already wrote;
3. measures each cell's texts with today's :func:`dpkit.textmetrics.measure_texts` against the
   same real test texts as today's cells, and writes the cell with its ``text_measures`` (and
   the commit that measured them) to ``--out`` (default ``results/before-voice/PRESET``, outside
   ``results/compare``: these cells are not at today's preset sizes), its digest recomputed;
4. prints :func:`dpkit.experiments.voice_report.voice_table` against ``--after``.

Run: ``python benchmarks/voice_before_after.py [--preset infinity] [--commit 9f2858c] [--from-cells DIR]
[--out results/before-voice/PRESET] [--after results/compare/PRESET]``. Seeded teaching runs on public benchmark data, not releases.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (file, text to find, replacement) in the old commit: keep the texts
PATCHES = (
    ("dpkit/experiments/cells.py",
     '        return {"metrics": metrics, "release": release_info, "wall_s": wall, "runtime": self.runtime(),',
     '        return {"texts": {"texts": [str(t) for t in texts], "labels": [str(y) for y in labels]},\n'
     '                "metrics": metrics, "release": release_info, "wall_s": wall, "runtime": self.runtime(),'),
    ("dpkit/experiments/results.py",
     '"metrics": result["metrics"], "release": result.get("release", {}),',
     '"metrics": result["metrics"], "release": result.get("release", {}), "texts": result.get("texts"),'),
)
#: the preset each ``--preset`` adds to the old commit (today's data sets, epsilon, seeds and sizes)
OLD_PRESETS = {
    "infinity": '    "infinity": Preset("infinity", ("rotten_tomatoes", "health_tweets"), (math.inf,), (0, 1, 2, 3, 4),\n'
                '                       Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24),\n'
                '                       max_per_class=1200, test_fraction=200 / 1200, estimate="before-voice rerun"),\n',
    "holdout-situations":
        '    "holdout-situations": Preset("holdout-situations", ("everyday_situations",), (8.0,), (0, 1, 2, 3, 4),\n'
        '                       Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24),\n'
        '                       max_per_class=1200, test_fraction=200 / 1200, estimate="before-voice rerun"),\n',
}
#: presets whose data sets the old commit cannot load: today's dpkit/data replaces its own
NEEDS_TODAYS_DATA = ("holdout-situations",)


def run_old_commit(commit: str, preset: str, scratch: Path) -> Path:
    """Extract ``commit``, patch it (:data:`PATCHES`, :data:`OLD_PRESETS`), run ``preset`` there; its cells' folder."""
    from dpkit.experiments.cells import DOCUMENT_TYPES

    source = scratch / "source"
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    patches = list(PATCHES) + [("dpkit/experiments/results.py", '    "model-probe": Preset(',
                                OLD_PRESETS[preset] + '    "model-probe": Preset(')]
    if preset in NEEDS_TODAYS_DATA:
        shutil.rmtree(source / "dpkit" / "data")
        data = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD", "dpkit/data"], check=True,
                              capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(source)], input=data, check=True)
        patches.append(("dpkit/experiments/cells.py", "DOCUMENT_TYPES = {",
                        f"DOCUMENT_TYPES = {{{', '.join(f'{k!r}: {v!r}' for k, v in DOCUMENT_TYPES.items())}, "))
    for name, old, new in patches:
        path = source / name
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{commit}:{name}: the patch's anchor is not there exactly once")
        path.write_text(text.replace(old, new))
    out = scratch / "cells"
    subprocess.run([sys.executable, "-m", "dpkit", "experiment", "compare", "--preset", preset,
                    "--out", str(out)], cwd=source, check=True)
    return out


def measure(cells_folder: Path, out: Path, old_commit: str, preset: str) -> None:
    """Each old cell with today's text measures, to ``out`` (digest recomputed); a cell made from the
    ``git archive`` (no repository there, so no commit recorded) gets ``old_commit`` as its commit."""
    from dpkit.experiments.cells import DOCUMENT_TYPES, LocalCells
    from dpkit.experiments.presets import PRESETS
    from dpkit.experiments.provenance import git_commit
    from dpkit.experiments.sealing import content_digest
    from dpkit.models.embed import load_embedder
    from dpkit.textmetrics import measure_texts

    cells = LocalCells(PRESETS[preset])   # the same real test split as today's cells
    embedder = load_embedder()
    out.mkdir(parents=True, exist_ok=True)
    commit = git_commit()
    for path in sorted(Path(cells_folder).glob("*.json")):
        body = json.loads(path.read_text())
        body.pop("digest", None)
        dataset, seed = body["cell"]["dataset"], int(body["cell"]["seed"])
        texts = (body.get("texts") or {}).get("texts")
        if body["cell"]["method"] != "real":
            if not texts:
                raise SystemExit(f"{path.name}: the old run stored no texts")
            _, test_texts, _, x_test = cells._dataset(dataset)
            body["text_measures"] = measure_texts(texts, test_texts, embedder=embedder, real_features=x_test,
                                                  document_type=DOCUMENT_TYPES[dataset], seed=seed)
        body["provenance"]["git_commit"] = body["provenance"].get("git_commit") or old_commit
        body["provenance"]["text_measures_commit"] = commit
        body["digest"] = content_digest(body)
        (out / path.name).write_text(json.dumps(body, ensure_ascii=False, sort_keys=True, indent=1) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="infinity", choices=sorted(OLD_PRESETS))
    parser.add_argument("--commit", default="9f2858c")
    parser.add_argument("--from-cells", default=None, help="cells an earlier run of step 2 wrote")
    parser.add_argument("--out", default=None, help="default results/before-voice/PRESET")
    parser.add_argument("--after", default=None, help="default results/compare/PRESET")
    args = parser.parse_args(argv)
    args.out = args.out or str(ROOT / "results" / "before-voice" / args.preset)
    args.after = args.after or str(ROOT / "results" / "compare" / args.preset)
    from dpkit.experiments import stored
    from dpkit.experiments.voice_report import load_before, over_ceiling, voice_table

    with tempfile.TemporaryDirectory() as scratch:
        cells = Path(args.from_cells) if args.from_cells else run_old_commit(args.commit, args.preset, Path(scratch))
        measure(cells, Path(args.out), args.commit, args.preset)
    after = stored.load_cells(Path(args.after))
    print(voice_table(load_before(Path(args.out)), after))
    print("over 5% assistant talk after:", over_ceiling(after) or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
