"""privacy-4 N8: the compare chapter's replace-one reading of private prediction's epsilon omitted delta's growth.

Before (``notebooks/compare_methods.ipynb``, "What 'equal epsilon' means"): "read under DP-ST's relation the
central methods' epsilon is up to twice as large; and private prediction's carries a delta besides". For
private prediction a replacement inside one batch doubles the sensitivity, so rho is up to 4x (epsilon 8.32
at the release's delta), and group privacy gives (2 epsilon, (1 + e^epsilon) delta): delta 45x. The chapter now
says so; the numbers it quotes are recomputed here from dpkit's accounting of the default release.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from dpkit.methods import pp
from dpkit.privacy.private_prediction import per_token_rho
from dpkit.privacy.zcdp import zcdp_to_epsilon

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def text() -> str:
    cells = json.loads((ROOT / "notebooks" / "compare_methods.ipynb").read_text(encoding="utf-8"))["cells"]
    [cell] = [c for c in cells if c["cell_type"] == "markdown" and "replace-one" in "".join(c["source"])
              and "twice" in "".join(c["source"])]
    return " ".join("".join(cell["source"]).split())


def test_n8_the_chapter_says_private_predictions_delta_grows_under_replace_one(text):
    assert "carries a $\\delta$ besides" not in text
    assert "Private prediction's $\\delta$ grows too" in text and "at most four times as large" in text


def test_n8_the_quoted_numbers_are_the_default_releases():
    config = pp.Config(epsilon=4.0)
    rho, delta = config.guarantee()["rho"], config.delta
    epsilon = zcdp_to_epsilon(rho, delta)
    assert (round(rho, 5), round(epsilon, 2), delta) == (0.28125, 3.78, 1e-6)
    # replace-one inside a batch: sensitivity 2c/s, so each token's rho is four times (up to the grid)
    s, c, tau = config.expected_batch_size, config.clip, config.temperature
    assert per_token_rho(s, 2 * c, tau) == pytest.approx(4 * per_token_rho(s, c, tau), rel=1e-8)
    assert round(zcdp_to_epsilon(4 * rho, delta), 2) == 8.32
    assert (round(2 * epsilon, 2), f"{(1 + math.exp(epsilon)) * delta:.1e}", round(1 + math.exp(epsilon))) == \
        (7.56, "4.5e-05", 45)


def test_n8_the_chapter_quotes_those_numbers(text):
    for quoted in ("\\rho = 0.28125", "\\varepsilon = 3.78", "\\varepsilon = 8.32", "(7.56, 4.5 \\cdot 10^{-5})",
                   "45 times larger"):
        assert quoted in text, quoted
    assert re.search(r"\\delta = 10\^\{-6\}", text)
