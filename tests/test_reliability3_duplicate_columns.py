"""reliability-3 N2 (probes 87, 88) and probe 90: a column named twice is refused, naming it, exit 2.

Before: ``text,text,label`` used the second ``text`` column without a word,
``text,label,label`` the last label column, and a JSON Lines object with a key
twice its last value.
"""

from __future__ import annotations

import pytest

from dpkit.cli import main
from dpkit.data.tables import read_table
from dpkit.validate import ParameterError


@pytest.mark.parametrize("header, repeated", [("text,text,label", "text"), ("text,label,label", "label"),
                                              (" text ,label,text", "text")])
def test_probe87_88_a_csv_header_with_a_repeated_name_is_refused(tmp_path, header, repeated):
    path = tmp_path / "data.csv"
    path.write_text(f"{header}\nfirst PRIVMARK,a,b\nx,b,a\n")
    with pytest.raises(ParameterError, match=f"column name '{repeated}' twice") as caught:
        read_table(path, "text", "label")
    assert "PRIVMARK" not in str(caught.value)


def test_unnamed_columns_may_repeat_they_are_never_read(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("text,,label,\nx,1,a,2\ny,3,b,4\n")
    assert read_table(path, "text", "label").labels == ("a", "b")


def test_probe90_a_json_lines_object_with_a_repeated_key_is_refused(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text('{"text": "x", "label": "a"}\n{"text": "PRIVMARK", "text": "y", "label": "b"}\n')
    with pytest.raises(ParameterError, match="line 2 has the key 'text' twice") as caught:
        read_table(path, "text", "label")
    assert "PRIVMARK" not in str(caught.value)


def test_the_cli_refuses_with_one_line_exit_2_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_text("text,text,label\nfirst,second,a\nx,y,b\n")
    out = tmp_path / "run"
    code = main(["synth", "dpst", "--input", str(path), "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--smoke", "--seed", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "twice" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
