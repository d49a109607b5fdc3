"""The input reader's public rules: formats, encodings, ragged rows, missing values, limits."""

import json

import pytest

from dpkit.data.tables import label_set, read_table
from dpkit.validate import ParameterError


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def test_csv_with_quoted_newlines_and_bom(tmp_path):
    path = write(tmp_path, "a.csv", '\ufefftext,label\n"line one\nline two",x\nplain,y\n')
    table = read_table(path, "text", "label")
    assert table.texts == ("line one\nline two", "plain")
    assert table.labels == ("x", "y")


def test_tsv_and_jsonl(tmp_path):
    tsv = write(tmp_path, "a.tsv", "t\tl\nhello, world\t1\n")
    assert read_table(tsv, "t", "l").texts == ("hello, world",)
    jsonl = write(tmp_path, "a.jsonl", json.dumps({"t": "a", "l": 1}) + "\n\n" + json.dumps({"t": None, "l": 2.0}) + "\n")
    table = read_table(jsonl, "t", "l")
    assert table.texts == ("a", "") and table.labels == ("1", "2")


def test_missing_and_nan_texts_are_kept_as_empty_documents(tmp_path):
    path = write(tmp_path, "a.csv", "text,label\n,a\nNaN,b\nnull,a\nok,b\n")
    assert read_table(path, "text", "label").texts == ("", "", "", "ok")


@pytest.mark.parametrize("name,data,needle", [
    ("bin.csv", b"text\x00\x01\x02,label\n", "binary"),
    ("latin.csv", "text,label\ncaf\xe9,a\n".encode("latin-1"), "not UTF-8"),
    ("ragged.csv", "text,label\na,b,c\n", "line 2 has 3 fields"),
    ("empty.csv", "", "empty"),
    ("header.csv", "text,label\n", "no data rows"),
    ("a.xlsx", "x", "must end in one of"),
    ("bad.jsonl", "{not json}\n", "line 1 is not JSON"),
])
def test_bad_files_name_the_problem(tmp_path, name, data, needle):
    path = write(tmp_path, name, data)
    with pytest.raises(ParameterError, match=needle):
        read_table(path, "text", "label")


def test_unknown_column_lists_the_columns(tmp_path):
    path = write(tmp_path, "a.csv", "body,label\nx,y\n")
    with pytest.raises(ParameterError) as info:
        read_table(path, "text", "label")
    assert info.value.name == "--text-column" and "['body', 'label']" in str(info.value)


def test_missing_label_is_an_error(tmp_path):
    path = write(tmp_path, "a.csv", "text,label\nx,\n")
    with pytest.raises(ParameterError, match="row 1 has no label"):
        read_table(path, "text", "label")


def test_limit_keeps_the_first_rows(tmp_path):
    path = write(tmp_path, "a.csv", "text\n" + "".join(f"row {i}\n" for i in range(100)))
    assert read_table(path, "text", limit=3).texts == ("row 0", "row 1", "row 2")


def test_huge_record_is_read_whole(tmp_path):
    big = "word " * 2_000_000  # 10 MB in one field
    path = write(tmp_path, "a.csv", f'text,label\n"{big}",a\n')
    assert len(read_table(path, "text", "label").texts[0]) == len(big)


def test_label_set_rules():
    assert label_set(["10", "9", "b", "a"]) == ("9", "10", "a", "b")
    assert label_set(["x"], "x, y") == ("x", "y")
    with pytest.raises(ParameterError, match="1 row.* data row 2") as info:
        label_set(["x", "SECRET-LABEL-XYZ"], "x,y")
    assert "SECRET-LABEL-XYZ" not in str(info.value)  # an input's label is private: rows are named by number
    assert label_set(["a,b", "c"], '["a,b", "c"]') == ("a,b", "c")
    with pytest.raises(ParameterError, match="distinct"):
        label_set(["x"], "x,x")


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_every_line_ending_is_read(tmp_path, ending):
    path = write(tmp_path, "a.csv", ending.join(["text,label", '"two' + ending + 'lines",x', "plain,y", ""]))
    table = read_table(path, "text", "label")
    assert table.texts == ("two" + ending + "lines", "plain") and table.labels == ("x", "y")
