"""Read a user's own labelled texts from CSV, TSV or JSON Lines, by public rules.

:func:`read_table` reads the whole file before anything else happens, so that
every problem is reported (as :class:`~dpkit.validate.ParameterError`, naming the
parameter, the value and what is allowed) before a run writes anything.

The rules, all public:

* **format** from the file name: ``.csv``, ``.tsv``/``.tab``, ``.jsonl``/``.ndjson``
  (one JSON object per line; blank lines skipped);
* **encoding**: UTF-8 (a byte-order mark is accepted). Other bytes (Latin-1, a
  binary file) are an error naming the first bad byte's line; a NUL byte means
  a binary file;
* **CSV/TSV**: the first row is the header; quoted fields may span lines; a row
  with another number of fields than the header is an error naming its line;
* **columns**: an unknown column is an error that lists the file's columns;
* **texts**: a missing, empty or NaN-like text (``""``, ``nan``, ``NaN``, ``null``,
  ``None``, JSON ``null``) is kept as an EMPTY document -- rows are never
  dropped because of their content, so the number of rows stays a function of
  the file's row count alone;
* **labels**: read as strings (a JSON number ``1`` or ``1.0`` becomes ``"1"``);
  a missing label is an error naming the row;
* ``limit``: keep the first ``limit`` data rows (applied while reading). A prefix is a
  stable rule only under replace-one; ``dpkit synth`` selects the rows of add/remove
  methods by a per-record rule instead (:mod:`dpkit.data.selection`).

Text length is not capped here: each method states its own character cap
(``max_chars``) and applies it (see :mod:`dpkit.methods`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from dpkit.validate import ParameterError, check_int

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
MISSING = frozenset({"", "nan", "none", "null", "na", "n/a"})


@dataclass(frozen=True)
class Table:
    """The columns a run uses, as read: texts, labels (or None), the file's column names."""

    path: str
    texts: tuple[str, ...]
    labels: tuple[str, ...] | None
    columns: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.texts)


def table_format(path: str | os.PathLike) -> str:
    """``csv``, ``tsv`` or ``jsonl`` from the file name; ParameterError otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ParameterError("--input", str(path), f"must end in one of {sorted(FORMATS)} "
                             "(CSV, TSV or JSON Lines, UTF-8)")
    return FORMATS[suffix]


def _decode(path: Path, data: bytes) -> str:
    if b"\x00" in data:
        raise ParameterError("--input", str(path), "is a binary file (it contains NUL bytes); "
                             "give a UTF-8 CSV, TSV or JSON Lines file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ParameterError("--input", str(path), f"is not UTF-8 (byte 0x{data[error.start]:02x} on line {line}); "
                             "re-encode it, e.g. `iconv -f latin1 -t utf-8`") from None


def _cell(value) -> str:
    """A cell as a string: numbers without a spurious '.0', missing values as ''."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _missing(text: str) -> bool:
    return text.strip().lower() in MISSING


def _delimited_rows(path: Path, text: str, delimiter: str, limit: int | None):
    csv.field_size_limit(2**31 - 1)  # a long record is the methods' business (their max_chars), not the reader's
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise ParameterError("--input", str(path), "is empty: it needs a header row and at least one data row")
        header = [h.strip() for h in header]
        rows = []
        for row in reader:
            if not row:
                continue  # a blank line
            if len(row) != len(header):
                raise ParameterError("--input", str(path),
                                     f"line {reader.line_num} has {len(row)} fields, the header has {len(header)} "
                                     "(ragged rows are not guessed at; quote fields that contain the delimiter)")
            rows.append(dict(zip(header, row)))
            if limit is not None and len(rows) >= limit:
                break
    except csv.Error as error:
        raise ParameterError("--input", str(path), f"is not valid CSV/TSV near line {reader.line_num}: {error}") from None
    return header, rows


def _jsonl_rows(path: Path, text: str, limit: int | None):
    rows, columns = [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ParameterError("--input", str(path), f"line {number} is not JSON: {error.msg}") from None
        if not isinstance(row, dict):
            raise ParameterError("--input", str(path), f"line {number} is not a JSON object")
        columns.update(dict.fromkeys(row))
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    return list(columns), rows


def read_table(path: str | os.PathLike, text_column: str, label_column: str | None = None, *,
               limit: int | None = None) -> Table:
    """Read ``text_column`` (and ``label_column``) of a CSV/TSV/JSONL file by the module's rules."""
    if not isinstance(text_column, str) or not text_column:
        raise ParameterError("--text-column", text_column, "must name a column")
    if label_column is not None and (not isinstance(label_column, str) or not label_column):
        raise ParameterError("--label-column", label_column, "must name a column")
    if limit is not None:
        limit = check_int("--limit", limit, minimum=1)
    path = Path(path)
    kind = table_format(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ParameterError("--input", str(path), "does not exist") from None
    except IsADirectoryError:
        raise ParameterError("--input", str(path), "is a folder; give a file") from None
    except OSError as error:
        raise ParameterError("--input", str(path), f"cannot be read ({error.strerror})") from None
    text = _decode(path, data)
    if kind == "jsonl":
        columns, rows = _jsonl_rows(path, text, limit)
    else:
        columns, rows = _delimited_rows(path, text, "," if kind == "csv" else "\t", limit)
    if not rows:
        raise ParameterError("--input", str(path), "has no data rows")
    for flag, column in (("--text-column", text_column), ("--label-column", label_column)):
        if column is not None and column not in columns:
            raise ParameterError(flag, column, f"is not a column of {path.name}; its columns are {list(columns)}")
    texts = tuple("" if _missing(cell := _cell(row.get(text_column))) else cell for row in rows)
    labels = None
    if label_column is not None:
        labels = tuple(_cell(row.get(label_column)).strip() for row in rows)
        for number, label in enumerate(labels, start=1):
            if _missing(label):
                raise ParameterError("--label-column", label_column,
                                     f"data row {number} has no label; every row needs one")
    return Table(str(path), texts, labels, tuple(columns))


def parse_labels(declared) -> tuple[str, ...]:
    """The label set the user declares (public): a JSON list (``'["a,b", "c"]'``, for names with commas),
    comma-separated names (``a,b,c``), or a sequence of names."""
    if isinstance(declared, str):
        text = declared.strip()
        if text.startswith("["):
            try:
                names = json.loads(text)
            except ValueError as error:
                raise ParameterError("--labels", declared, f"starts with '[' but is not a JSON list: {error}") from None
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ParameterError("--labels", declared, "must be a JSON list of strings")
        else:
            names = declared.split(",")
    else:
        names = list(declared)
    names = tuple(str(n).strip() for n in names)
    if any(not n for n in names) or len(set(names)) != len(names) or len(names) < 1:
        raise ParameterError("--labels", declared, "must be distinct, non-empty names: comma-separated, or a JSON "
                             "list such as '[\"a,b\", \"c\"]'")
    return names


def label_set(labels, declared=None) -> tuple[str, ...]:
    """The public label set: ``declared`` (``--labels``, see :func:`parse_labels`) or, when None, the input's
    distinct labels in sorted order (numbers numerically) -- which the privacy report then states is
    treated as public. Every label must belong to a declared set; the error gives the first offending
    row and the count, never a label value (the input's labels are private)."""
    if declared is not None:
        names = parse_labels(declared)
        known = set(names)
        rows = [number for number, label in enumerate(labels, start=1) if label not in known]
        if rows:
            raise ParameterError("--labels", declared, f"must contain every label of the input: {len(rows)} row(s) "
                                 f"have a label outside it (the first is data row {rows[0]}); labels are "
                                 "compared exactly, after trimming spaces")
        return names

    def key(name: str):
        try:
            return (0, float(name), name)
        except ValueError:
            return (1, 0.0, name)

    return tuple(sorted(set(labels), key=key))


def load_table_dataset(path: str | os.PathLike, text_column: str | None = None, label_column: str | None = None, *,
                       test_fraction: float = 0.2, seed: int = 0, max_per_class: int | None = None,
                       max_documents: int | None = None):
    """A user's labelled file as a :class:`~dpkit.data.Dataset` (seeded stratified split), for the chapters.

    Read by :func:`read_table` -- the reader of ``dpkit synth`` -- with ``text_column``
    / ``label_column`` defaulting to ``"text"`` / ``"label"``; texts are cleaned and
    deduplicated, and classes kept in the order of :func:`label_set`, as every
    bundled loader does (:func:`dpkit.data.dataset.split_dataset`).
    """
    from dpkit.data.dataset import clean_records, split_dataset

    table = read_table(path, text_column or "text", label_column or "label")
    names = label_set(table.labels)
    index = {name: k for k, name in enumerate(names)}
    records = clean_records(zip(table.texts, table.labels))
    return split_dataset(Path(path).stem, [t for t, _ in records], [index[y] for _, y in records], names,
                         test_fraction=test_fraction, seed=seed, max_per_class=max_per_class,
                         max_documents=max_documents)
