"""Numbers that the part pages' exercise solutions quote are what the library computes.

The part pages are plain Markdown (no executed cells), so a number in their prose cannot be glued;
this test recomputes each one and fails when the prose and the library disagree.
"""

from __future__ import annotations

import re
from pathlib import Path

from dpkit.privacy.zcdp import bounded_range_to_zcdp, zcdp_to_epsilon, zcdp_to_epsilon_bun_steinke

ROOT = Path(__file__).resolve().parents[1]


def _solution(page: str, label: str) -> str:
    text = (ROOT / "book" / f"{page}.md").read_text()
    found = re.search(rf"```\{{solution\}} {label}\n(.*?)```", text, re.S)
    assert found, f"{page}: no solution {label}"
    return found.group(1)


def test_composition_exercise_numbers():
    text = _solution("part_foundations", "ex-foundations-compose")
    rho = 100 * bounded_range_to_zcdp(0.1)
    assert f"\\rho = {rho:.3f}" in text, text
    assert f"{zcdp_to_epsilon_bun_steinke(rho, 1e-5):.2f}" in text
    assert f"{zcdp_to_epsilon(rho, 1e-5):.2f}" in text
    assert "four times" in text and 10 / zcdp_to_epsilon(rho, 1e-5) > 4
