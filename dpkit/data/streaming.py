"""Rows of a CSV, TSV or JSON Lines file, one at a time: the file is never held whole in memory.

:func:`table_rows` is the streaming half of :func:`dpkit.data.tables.read_table`.
It reads the file line by line in binary, so memory is bounded by the longest
line (or quoted record) and not by the file, and applies the reader's byte rules
line by line (a NUL byte means a binary file; bytes that are not UTF-8 are an
error naming the line; a byte-order mark on the first line is dropped). CSV/TSV
rows come from :mod:`csv` over those lines (quoted fields may span lines); a
JSON Lines file gives one object per non-blank line. A header that names a
column twice, or a JSON object holding a key twice, is refused naming it:
which of the two is the private text or label would otherwise be a silent guess.

``columns`` (a dict used as an ordered set) is filled as the rows are read: the
header of a CSV/TSV file at once, the union of the keys seen so far for JSON
Lines. ``progress`` (optional) is called with the number of bytes read, for a
progress bar with an ETA (:func:`dpkit.runs.progress_bars.byte_progress`).
Errors are :class:`~dpkit.validate.ParameterError` naming ``--input``, a line
number and never a cell's value.
"""

from __future__ import annotations

import codecs
import csv
import json
from pathlib import Path
from typing import Callable, Iterator

from dpkit.validate import ParameterError


def _open(path: Path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise ParameterError("--input", str(path), "does not exist") from None
    except IsADirectoryError:
        raise ParameterError("--input", str(path), "is a folder; give a file") from None
    except OSError as error:
        raise ParameterError("--input", str(path), f"cannot be read ({error.strerror})") from None


def _lines(path: Path, handle, progress: Callable[[int], None] | None) -> Iterator[str]:
    """The file's lines, decoded as UTF-8 one at a time (line endings kept, for the csv module)."""
    for number, raw in enumerate(handle, start=1):
        if progress is not None:
            progress(len(raw))
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8):]
        if b"\x00" in raw:
            raise ParameterError("--input", str(path), "is a binary file (it contains NUL bytes); "
                                 "give a UTF-8 CSV, TSV or JSON Lines file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ParameterError("--input", str(path), f"is not UTF-8 (byte 0x{raw[error.start]:02x} on line "
                                 f"{number}); re-encode it, e.g. `iconv -f latin1 -t utf-8`") from None
        if "\r" in text.rstrip("\r\n"):  # a bare carriage return also ends a line (old Mac files)
            yield from (piece.decode("utf-8") for piece in raw.splitlines(keepends=True))
        else:
            yield text


def _first_repeated(names) -> str | None:
    """The first name that occurs twice in ``names`` (None when all differ)."""
    seen = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


class _RepeatedKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_once(pairs: list) -> dict:
    """A JSON object as a dict, refusing a key that occurs twice (:func:`json.loads` keeps the last silently)."""
    repeated = _first_repeated(key for key, _ in pairs)
    if repeated is not None:
        raise _RepeatedKey(repeated)
    return dict(pairs)


def _delimited(path: Path, lines: Iterator[str], delimiter: str, columns: dict) -> Iterator[dict]:
    csv.field_size_limit(2**31 - 1)  # a long record is the methods' business (their max_chars), not the reader's
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise ParameterError("--input", str(path), "is empty: it needs a header row and at least one data row")
        header = [h.strip() for h in header]
        repeated = _first_repeated(h for h in header if h)  # unnamed columns are never read: '' may repeat
        if repeated is not None:
            raise ParameterError("--input", str(path), f"has the column name {repeated!r} twice in its header (after "
                                 "trimming spaces): which column is private text or label would be a guess; "
                                 "rename or drop one of them")
        columns.update(dict.fromkeys(header))
        for row in reader:
            if not row:
                continue  # a blank line
            if len(row) != len(header):
                raise ParameterError("--input", str(path),
                                     f"line {reader.line_num} has {len(row)} fields, the header has {len(header)} "
                                     "(ragged rows are not guessed at; quote fields that contain the delimiter)")
            yield dict(zip(header, row))
    except csv.Error as error:
        raise ParameterError("--input", str(path), f"is not valid CSV/TSV near line {reader.line_num}: {error}") from None


def _json_lines(path: Path, lines: Iterator[str], columns: dict) -> Iterator[dict]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, object_pairs_hook=_object_once)
        except _RepeatedKey as repeated:
            raise ParameterError("--input", str(path), f"line {number} has the key {repeated.key!r} twice in one "
                                 "object: JSON keeps the last value without a word, so which one is private text "
                                 "or label would be a guess; keep one of them") from None
        except json.JSONDecodeError as error:
            raise ParameterError("--input", str(path), f"line {number} is not JSON: {error.msg}") from None
        if not isinstance(row, dict):
            raise ParameterError("--input", str(path), f"line {number} is not a JSON object")
        columns.update(dict.fromkeys(row))
        yield row


def table_rows(path: Path, kind: str, columns: dict, progress: Callable[[int], None] | None = None
               ) -> Iterator[dict]:
    """Each data row of ``path`` (format ``kind``: csv, tsv or jsonl) as a dict, read as it is needed.

    The file is closed when the iteration ends or the generator is closed
    (a caller that stops early, e.g. at a prefix limit, reads no further).
    """
    with _open(path) as handle:
        lines = _lines(path, handle, progress)
        if kind == "jsonl":
            yield from _json_lines(path, lines, columns)
        else:
            yield from _delimited(path, lines, "," if kind == "csv" else "\t", columns)
