"""data/DATA.md and dpkit.data.provenance agree with what is installed."""

import re
from pathlib import Path

import pytest

from dpkit.data.provenance import SOURCES, installed_version, provenance
from dpkit.validate import ParameterError

DATA_MD = Path(__file__).resolve().parents[1] / "data" / "DATA.md"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_source_is_installed_and_documented(name):
    info = provenance(name)
    assert info["version"] is not None, f"{info['package']} is not installed"
    text = DATA_MD.read_text(encoding="utf-8")
    # DATA.md names the package with the version that is installed
    spelled = {info["package"], info["package"].replace("_", "-")}
    found = [v for p in spelled for v in re.findall(rf"`{re.escape(p)}` ([0-9][0-9.]*)", text,
                                                     flags=re.IGNORECASE)]
    assert found, f"DATA.md does not cite {info['package']} with a version"
    assert set(found) == {info["version"]}


def test_unknown_source_is_rejected():
    with pytest.raises(ParameterError):
        provenance("imdb")
    assert installed_version("no-such-distribution-xyz") is None
