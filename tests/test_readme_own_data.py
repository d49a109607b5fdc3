"""The README's "Your own data" commands run as written (with --smoke) on the bundled model, in a fresh folder.

This is also the test that each method runs for real, end to end, on the local model.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dpkit.methods import METHOD_NAMES  # every registered method has its command in the README

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- own-data:begin -->\s*```bash\n(.*?)```\s*<!-- own-data:end -->", text, re.S)
    assert block, "README.md lost its own-data block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_block_covers_every_method_and_evaluate():
    commands = readme_commands()
    for method in METHOD_NAMES:
        assert any(f"dpkit synth {method} " in c and "--smoke" in c for c in commands), method
    assert any("dpkit evaluate " in c for c in commands)
    assert any("papermill" in c and "data_path" in c for c in commands)


def run_readme(tmp_path, command):
    """Run one README command as written, in a fresh folder that holds the repository's data/ and notebooks/."""
    for name in ("data", "notebooks"):
        if not (tmp_path / name).exists():
            (tmp_path / name).symlink_to(ROOT / name)
    argv = shlex.split(command)
    assert argv[0].startswith(".venv/bin/"), command
    argv[0] = str(Path(sys.executable).parent / argv[0].removeprefix(".venv/bin/"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=580)
    assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    return done


def command(word: str) -> str:
    return next(c for c in readme_commands() if word in c)


def check_synth(tmp_path, method, done):
    assert len(done.stdout.strip().splitlines()) == 1 and "synthetic records" in done.stdout
    release = tmp_path / "runs" / f"own-{method}" / "release"
    records = [json.loads(line) for line in (release / "synthetic.jsonl").read_text().splitlines()]
    assert records and all(r["label"] in ("billing", "delivery", "product") for r in records)
    config = json.loads((release / "config.json").read_text())
    assert config["method"] == method
    assert "customer support message" in json.dumps(config)  # --document-type is recorded


@pytest.mark.slow
@pytest.mark.parametrize("method", [m for m in METHOD_NAMES if m != "kps"])  # kps: with evaluate, below
def test_readme_synth_runs(tmp_path, method):
    check_synth(tmp_path, method, run_readme(tmp_path, command(f"dpkit synth {method} ")))


@pytest.mark.slow
def test_readme_synth_kps_and_evaluate_run(tmp_path):
    """DP-KPS's synth command, then the evaluate command on its release (one kps run serves both)."""
    check_synth(tmp_path, "kps", run_readme(tmp_path, command("dpkit synth kps ")))
    out = json.loads(run_readme(tmp_path, command("dpkit evaluate ")).stdout)
    assert out["n_test"] == 60 and 0 <= out["balanced_accuracy"]["estimate"] <= 1
    top, measures = documented_json_keys()
    assert top - {"real"} <= set(out), top - set(out)  # "real" only with --real
    assert measures <= set(out["text_measures"]), measures - set(out["text_measures"])


def documented_json_keys() -> tuple[set[str], set[str]]:
    """The keys docs/evaluate.md promises in --json: top level, and inside text_measures."""
    rows = [line for line in (ROOT / "docs" / "evaluate.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")]
    top = {key for row in rows for key in re.findall(r"`([a-z_0-9]+)`", row.split("|")[1])}
    measures_row = next(row for row in rows if row.startswith("| `text_measures` |"))
    measures = set(re.findall(r"`([a-z_0-9]+)`", measures_row.split("|")[2]))
    return top, measures


def test_the_documented_json_keys_are_read_from_the_page():
    top, measures = documented_json_keys()
    assert {"balanced_accuracy", "n_test", "text_measures", "real"} <= top
    assert {"assistant_talk", "knn_precision", "auroc_real_vs_synthetic"} <= measures


@pytest.mark.slow
def test_readme_papermill_runs(tmp_path):
    (tmp_path / "runs").mkdir()  # made by the synth commands above it in the README
    run_readme(tmp_path, command("papermill "))
    assert (tmp_path / "runs" / "own-kps.ipynb").exists()
