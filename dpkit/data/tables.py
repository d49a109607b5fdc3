"""Read a user's own labelled texts from CSV, TSV or JSON Lines, by public rules.

:func:`read_table` reads the file to its end (or to the row rule's prefix)
before anything else happens, so that every problem is reported (as
:class:`~dpkit.validate.ParameterError`, naming the parameter, the value and
what is allowed) before a run writes anything. It streams the file
(:mod:`dpkit.data.streaming`) and applies the public row rule as it goes, so
memory holds the rows kept, never the whole file.

The rules, all public:

* **format** from the file name: ``.csv``, ``.tsv``/``.tab``, ``.jsonl``/``.ndjson``
  (one JSON object per line; blank lines skipped);
* **encoding**: UTF-8 (a byte-order mark is accepted). Other bytes (Latin-1, a
  binary file) are an error naming the first bad byte's line; a NUL byte means
  a binary file;
* **CSV/TSV**: the first row is the header; quoted fields may span lines; a row
  with another number of fields than the header is an error naming its line;
* **columns**: an unknown column is an error that lists the file's columns; a column
  name twice in the header (or a key twice in a JSON object) is an error naming it;
* **texts**: a missing, empty or NaN-like text (``""``, ``nan``, ``NaN``, ``null``,
  ``None``, JSON ``null``) is kept as an EMPTY document -- rows are never
  dropped because of their content, so the number of rows stays a function of
  the file's row count alone;
* **labels**: read as strings (a JSON number ``1`` or ``1.0`` becomes ``"1"``);
  a missing label is an error naming the row;
* ``limit``: keep the first ``limit`` data rows (applied while reading). A prefix is a
  stable rule only under replace-one; ``dpkit synth`` selects the rows of add/remove
  methods by a per-record rule instead (:mod:`dpkit.data.selection`), also applied
  while reading (``rule=``), so the rows it drops are never held.

Text length is not capped here: each method states its own character cap
(``max_chars``) and applies it (see :mod:`dpkit.methods`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from dpkit.data.dataset import clean_records, split_dataset
from dpkit.data.streaming import table_rows
from dpkit.runs.progress_bars import byte_progress
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
    rows_read: int | None = None  # data rows read from the file (kept or not); private, never released

    def __len__(self) -> int:
        return len(self.texts)


def table_format(path: str | os.PathLike) -> str:
    """``csv``, ``tsv`` or ``jsonl`` from the file name; ParameterError otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ParameterError("--input", str(path), f"must end in one of {sorted(FORMATS)} "
                             "(CSV, TSV or JSON Lines, UTF-8)")
    return FORMATS[suffix]


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


class RowLimitExceeded(ParameterError):
    """More rows were selected than the caller's public bound ``max_rows`` allows (nothing was written)."""


def read_table(path: str | os.PathLike, text_column: str, label_column: str | None = None, *,
               limit: int | None = None, rule=None, declared_labels=None, max_rows: int | None = None) -> Table:
    """Read ``text_column`` (and ``label_column``) of a CSV/TSV/JSONL file by the module's rules.

    The file is streamed (:mod:`dpkit.data.streaming`): memory holds the rows
    KEPT, never the file. ``rule`` (a :class:`~dpkit.data.selection.RowRule`)
    is applied while reading: a ``prefix`` rule stops after its ``limit`` rows,
    a ``hash`` rule keeps each row by its own keyed hash. ``declared_labels``
    (``--labels``): every row READ (kept or not) must carry one of them; the
    error gives a count and the first row's number, never a label.
    ``max_rows``: a public bound on the rows kept; one more raises
    :class:`RowLimitExceeded` at once (the rest of the file is not read).
    Every other problem is raised when the reading ends, before anything is written.
    """
    if not isinstance(text_column, str) or not text_column:
        raise ParameterError("--text-column", text_column, "must name a column")
    if label_column is not None and (not isinstance(label_column, str) or not label_column):
        raise ParameterError("--label-column", label_column, "must name a column")
    if limit is not None:
        limit = check_int("--limit", limit, minimum=1)
    if rule is not None and rule.kind == "prefix":
        limit = rule.limit if limit is None else min(limit, rule.limit)
    keeps = None if rule is None or rule.kind != "hash" else rule.keeps
    declared = None if declared_labels is None else set(parse_labels(declared_labels))
    path = Path(path)
    kind = table_format(path)
    columns: dict = {}
    texts, labels, names = [], [], {}
    read, no_label, outside, first_outside = 0, None, 0, None
    try:
        size = path.stat().st_size
    except OSError:
        size = None
    with byte_progress(size, "reading the input") as advance:
        rows = table_rows(path, kind, columns, advance)
        for row in rows:
            if read == 0 and kind != "jsonl":  # a CSV/TSV header names every column: check before reading on
                _check_columns(path, columns, text_column, label_column)
            read += 1
            text = _cell(row.get(text_column))
            text = "" if _missing(text) else text
            label = None
            if label_column is not None:
                label = _cell(row.get(label_column)).strip()
                if _missing(label):
                    no_label = no_label or read
                elif declared is not None and label not in declared:
                    outside += 1
                    first_outside = first_outside or read
                label = names.setdefault(label, label)  # one string object per distinct label
            if keeps is None or keeps(text, label):
                if max_rows is not None and len(texts) >= max_rows:
                    rows.close()
                    raise RowLimitExceeded("--input", str(path), f"has more than {max_rows} rows to read")
                texts.append(text)
                labels.append(label)
            if limit is not None and read >= limit:
                rows.close()
                break
    if not read:
        raise ParameterError("--input", str(path), "has no data rows")
    _check_columns(path, columns, text_column, label_column)
    if no_label is not None:
        raise ParameterError("--label-column", label_column, f"data row {no_label} has no label; every row needs one")
    if outside:
        raise outside_labels_error(declared_labels, outside, first_outside)
    return Table(str(path), tuple(texts), tuple(labels) if label_column is not None else None, tuple(columns),
                 rows_read=read)


def _check_columns(path: Path, columns: dict, text_column: str, label_column: str | None) -> None:
    for flag, column in (("--text-column", text_column), ("--label-column", label_column)):
        if column is not None and column not in columns:
            raise ParameterError(flag, column, f"is not a column of {path.name}; its columns are {list(columns)}")


def outside_labels_error(declared, count: int, first: int) -> ParameterError:
    """The error for rows whose label is not in the declared set: a count and the first row, no label."""
    return ParameterError("--labels", declared, f"must contain every label of the input: {count} row(s) "
                          f"have a label outside it (the first is data row {first}); labels are "
                          "compared exactly, after trimming spaces")


#: The longest public description of a label (characters): a few words that go into every prompt.
MAX_DESCRIPTION_CHARS = 200
_LABELS_ALLOWED = ("comma-separated names (a,b), a JSON list such as '[\"a,b\", \"c\"]', or a JSON object mapping "
                   "each name to its public description such as '{\"ham\": \"a personal message between friends\", "
                   "\"spam\": \"an unsolicited advertisement\"}'")


def _declared_json(declared: str):
    """``--labels`` that starts with ``[`` or ``{`` parsed as JSON (ParameterError naming the flag when it is not)."""
    try:
        return json.loads(declared)
    except ValueError as error:
        raise ParameterError("--labels", declared, f"starts with '{declared.strip()[0]}' but is not valid JSON "
                             f"({error}); must be {_LABELS_ALLOWED}") from None


def parse_labels(declared) -> tuple[str, ...]:
    """The label set the user declares (public): a JSON list (``'["a,b", "c"]'``, for names with commas),
    comma-separated names (``a,b,c``), a JSON object of names to descriptions (its keys, in order; see
    :func:`parse_label_descriptions`), or a sequence of names."""
    if isinstance(declared, str):
        text = declared.strip()
        if text.startswith("{"):
            names = list(parse_label_descriptions(declared))
        elif text.startswith("["):
            names = _declared_json(text)
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ParameterError("--labels", declared, "must be a JSON list of strings")
        else:
            names = declared.split(",")
    elif isinstance(declared, dict):
        names = list(parse_label_descriptions(declared))
    else:
        names = list(declared)
    names = tuple(str(n).strip() for n in names)
    if any(not n for n in names) or len(set(names)) != len(names) or len(names) < 1:
        raise ParameterError("--labels", declared, "must be distinct, non-empty names: comma-separated, or a JSON "
                             "list such as '[\"a,b\", \"c\"]'")
    return names


def parse_label_descriptions(declared) -> dict[str, str] | None:
    """The public description of each label, when ``--labels`` is a JSON object (``'{"ham": "a personal message
    between friends", "spam": "an unsolicited advertisement"}'``) or a dict; None for a plain label set.

    Names are stripped and must be distinct and non-empty; each description must be a non-empty string of at
    most :data:`MAX_DESCRIPTION_CHARS` characters on one line (it goes into every prompt). The descriptions
    are public parameters, like the names: they are written to ``config.json`` and the privacy report says so.
    """
    if isinstance(declared, str):
        if not declared.strip().startswith("{"):
            return None
        table = _declared_json(declared.strip())
    elif isinstance(declared, dict):
        table = declared
    else:
        return None
    if not isinstance(table, dict) or not table:
        raise ParameterError("--labels", declared, f"must be {_LABELS_ALLOWED}, with at least one label")
    out: dict[str, str] = {}
    for name, description in table.items():
        key = str(name).strip()
        if not key or key in out:
            raise ParameterError("--labels", declared, f"has an empty or repeated label name {name!r}: names must "
                                 "be distinct and non-empty")
        if not isinstance(description, str) or not description.strip():
            raise ParameterError("--labels", declared, f"gives label {key!r} the description {description!r}: each "
                                 "description must be a non-empty string of public words")
        text = " ".join(description.split())
        if len(text) > MAX_DESCRIPTION_CHARS or "\n" in description.strip():
            raise ParameterError("--labels", declared, f"gives label {key!r} a description of {len(text)} "
                                 f"characters or several lines: each must be one line of at most "
                                 f"{MAX_DESCRIPTION_CHARS} characters")
        out[key] = text
    return out


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
            raise outside_labels_error(declared, len(rows), rows[0])
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
    table = read_table(path, text_column or "text", label_column or "label")
    names = label_set(table.labels)
    index = {name: k for k, name in enumerate(names)}
    records = clean_records(zip(table.texts, table.labels))
    return split_dataset(Path(path).stem, [t for t, _ in records], [index[y] for _, y in records], names,
                         test_fraction=test_fraction, seed=seed, max_per_class=max_per_class,
                         max_documents=max_documents)
