"""A user's own public triple corpus for DP-ST (``--set public_corpus=FILE``): bad files are refused by name."""

import subprocess
import sys

import pytest

from dpkit.dpst.corpus import read_public_texts
from dpkit.methods.dpst import Config, own_public_texts
from dpkit.validate import ParameterError


def _bad_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n   \n\t\n", encoding="utf-8")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\u00e9 opened a clinic\n".encode("latin-1"))
    return {"blank lines only": (empty, "it has none"), "not UTF-8": (latin, "not UTF-8"),
            "missing": (tmp_path / "missing.txt", "not an existing file"),
            "a folder": (tmp_path, "not an existing file")}


def test_good_file_gives_its_non_blank_lines(tmp_path):
    path = tmp_path / "public.txt"
    path.write_text("The clinic opened a ward.\n\n  Doctors recommend walks.  \n", encoding="utf-8")
    assert read_public_texts(path) == ["The clinic opened a ward.", "Doctors recommend walks."]
    config = Config(epsilon=8.0, public_corpus=str(path))
    assert own_public_texts(config) == ["The clinic opened a ward.", "Doctors recommend walks."]
    assert own_public_texts(Config(epsilon=8.0)) is None


@pytest.mark.parametrize("case", ["blank lines only", "not UTF-8", "missing", "a folder"])
def test_bad_file_is_refused_naming_the_parameter(tmp_path, case):
    path, why = _bad_files(tmp_path)[case]
    with pytest.raises(ParameterError) as err:
        Config(epsilon=8.0, public_corpus=str(path))
    # a long value is shortened in the middle of the message (xdist's temporary paths are long): its name stays
    assert err.value.name == "public_corpus" and why in str(err.value) and path.name in str(err.value)
    assert "UTF-8 text file of public texts, one per line" in str(err.value)


def test_cli_refuses_a_non_utf8_corpus_with_exit_2(tmp_path):
    path, _ = _bad_files(tmp_path)["not UTF-8"]
    done = subprocess.run([sys.executable, "-m", "dpkit", "synth", "dpst", "--epsilon", "8", "--plan",
                           "--set", f"public_corpus={path}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "public_corpus=" in done.stderr and "not UTF-8" in done.stderr and "Traceback" not in done.stderr
