"""The README's "Your own data" commands run as written (with --smoke) on the bundled model, in a fresh folder.

This is also the test that each method runs for real, end to end, on the local model.
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- own-data:begin -->\s*```bash\n(.*?)```\s*<!-- own-data:end -->", text, re.S)
    assert block, "README.md lost its own-data block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_block_covers_every_method_and_evaluate():
    commands = readme_commands()
    for method in ("kps", "pp", "dpst"):
        assert any(f"dpkit synth {method} " in c and "--smoke" in c for c in commands), method
    assert any("dpkit evaluate " in c for c in commands)
    assert any("papermill" in c and "data_path" in c for c in commands)


@pytest.mark.slow
def test_readme_own_data_commands_run(tmp_path):
    for name in ("data", "notebooks"):
        (tmp_path / name).symlink_to(ROOT / name)
    bin_dir = Path(sys.executable).parent
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    for command in readme_commands():
        argv = shlex.split(command)
        assert argv[0].startswith(".venv/bin/"), command
        argv[0] = str(bin_dir / argv[0].removeprefix(".venv/bin/"))
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    for method in ("kps", "pp", "dpst"):
        release = tmp_path / "runs" / f"own-{method}" / "release"
        records = [json.loads(line) for line in (release / "synthetic.jsonl").read_text().splitlines()]
        assert records and all(r["label"] in ("billing", "delivery", "product") for r in records)
        assert json.loads((release / "config.json").read_text())["method"] == method
