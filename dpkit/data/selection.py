"""Which input rows a run reads: a public per-record rule, so one record changes at most one selected record.

Keeping "the first N rows" is not a stable rule under add/remove: adding one
row above the cut also pushes the N-th row out, so the records a mechanism sees
differ in TWO records, and the stated epsilon holds only for a group of two.
Whether the cut binds depends on the private row count, too.

The rule here looks at each record alone. A row is kept iff

    HMAC-SHA256(key, canonical(text, label)) / 2**256  <  fraction

where ``key`` is derived from a PUBLIC salt (recorded in ``config.json``) and
``fraction`` is public: given directly (``--sample-fraction``) or derived from
the user's limit and the row count the user DECLARES (``--limit N --rows M``
gives ``min(1, N / M)``), never from the file's actual row count. Adding or
removing one record changes whether that record is kept and nothing else
(stability 1 under add/remove), so every add/remove guarantee carries over
unchanged. The key is public: this is a deterministic public filter, and no
privacy amplification by subsampling is claimed. Identical records are kept or
dropped together, and each copy is still its own record.

Under replace-one (DP-ST), where the number of records is public, the rule is
the prefix instead (:func:`prefix_rows`): a prefix of a replace-one pair is
again a replace-one pair, while a hashed filter would make the number of
outputs depend on the replaced record.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Sequence

from dpkit.validate import ParameterError, check_in_range, check_int

DEFAULT_SALT = "dpkit-rows-v1"
_SCALE = 1 << 64  # the first 8 bytes of the HMAC, compared to floor(fraction * 2**64)


@dataclass(frozen=True)
class RowRule:
    """A public row-selection rule: ``kind`` is ``all``, ``hash`` (per record) or ``prefix`` (replace-one)."""

    kind: str = "all"
    fraction: float = 1.0
    salt: str = DEFAULT_SALT
    limit: int | None = None          # prefix: the first ``limit`` rows; hash: the user's limit (for the record)
    declared_rows: int | None = None  # the row count the user declared (public), if any
    per_record: bool = False          # add/remove: the number of rows kept is private (see describe)
    max_rows: int | None = None       # a public bound on the rows kept (--smoke); more is refused

    def __post_init__(self):
        if self.kind not in ("all", "hash", "prefix"):
            raise ParameterError("row rule", self.kind, "must be 'all', 'hash' or 'prefix'")
        check_in_range("--sample-fraction", self.fraction, 0.0, 1.0, low_open=True)
        if not isinstance(self.salt, str) or not self.salt:
            raise ParameterError("--sample-salt", self.salt, "must be a non-empty public string")
        if self.kind == "prefix":
            check_int("--limit", self.limit, minimum=1)

    def to_dict(self) -> dict:
        out = {"rule": self.kind}
        if self.kind == "hash":
            out.update(fraction=self.fraction, salt=self.salt)
        if self.limit is not None:
            out["limit"] = self.limit
        if self.declared_rows is not None:
            out["declared_rows"] = self.declared_rows
        if self.per_record:
            out["per_record"] = True
        if self.max_rows is not None:
            out["max_rows"] = self.max_rows
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "RowRule":
        return cls(data.get("rule", "all"), data.get("fraction", 1.0), data.get("salt", DEFAULT_SALT),
                   data.get("limit"), data.get("declared_rows"), bool(data.get("per_record", False)),
                   data.get("max_rows"))

    def existence(self) -> str:
        """The condition on the private number of kept rows under which a release exists (add/remove only),
        stated exactly: the run is refused otherwise, and the stated epsilon does not cover that event."""
        if not self.per_record:
            return ""
        bound = f" and at most {self.max_rows} (the --smoke bound)" if self.max_rows is not None else ""
        return (f"A release is made only if at least one row{bound} is kept; otherwise the run is refused before "
                "anything is spent or written. Whether a release exists therefore depends on the private number "
                "of kept rows, and one record can decide it: the stated guarantee holds for releases made, "
                "and does not cover that event")

    def describe(self) -> str:
        """The privacy report's words on the rows read (public facts only), with :meth:`existence`."""
        condition = self.existence()
        return self._selection() + (f". {condition}" if condition else "")

    def _selection(self) -> str:
        if self.kind == "all":
            return "every row of the input"
        if self.kind == "prefix":
            return (f"the first {self.limit} rows (under replace-one the number of rows is public, and a prefix of "
                    "two neighbouring inputs is again a neighbouring pair)")
        return (f"each row is kept iff HMAC-SHA256 of its text and label, keyed by the public salt "
                f"{self.salt!r}, falls below the public fraction {self.fraction:.6g}"
                + (f" (= the limit {self.limit} over the declared {self.declared_rows} rows)"
                   if self.limit is not None and self.declared_rows else "")
                + "; a row's selection depends on that row alone, so adding or removing one record changes at "
                  "most one selected record")

    def keeps(self, text: str, label: str | None) -> bool:
        """Whether the per-record rule keeps this row (``all`` and ``prefix``: by position, so always True here);
        a function of this row alone, applied while the input is read (:func:`dpkit.data.tables.read_table`)."""
        return self.kind != "hash" or keep(text, label, self.fraction, self.salt)

    def select(self, texts: Sequence[str], labels: Sequence[str] | None) -> list[int]:
        """Indices of the kept rows, in file order."""
        n = len(texts)
        if self.kind == "all":
            return list(range(n))
        if self.kind == "prefix":
            return list(range(min(n, self.limit)))
        return [i for i in range(n) if keep(texts[i], None if labels is None else labels[i], self.fraction,
                                           self.salt)]


def _key(salt: str) -> bytes:
    return hashlib.sha256(b"dpkit row selection\x00" + salt.encode("utf-8")).digest()


@functools.lru_cache(maxsize=16)
def _keyed(salt: str):
    """An HMAC-SHA256 already keyed by the salt's key; each record hashes a copy (same digest, less work)."""
    return hmac.new(_key(salt), digestmod=hashlib.sha256)


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode  # the text of json.dumps(..., ensure_ascii=False)


def keep(text: str, label: str | None, fraction: float, salt: str = DEFAULT_SALT) -> bool:
    """Whether the record ``(text, label)`` is kept at ``fraction``: a function of this record alone."""
    if fraction >= 1.0:
        return True
    mac = _keyed(salt).copy()
    mac.update(_ENCODE([text, label]).encode("utf-8"))
    return int.from_bytes(mac.digest()[:8], "big") < int(fraction * _SCALE)


def row_rule(*, per_record: bool, limit: int | None = None, declared_rows: int | None = None,
             fraction: float | None = None, salt: str | None = None, max_rows: int | None = None) -> RowRule:
    """The public rule for the flags given; ParameterError names the flag.

    ``per_record`` (add/remove methods): ``fraction``, or ``limit`` with
    ``declared_rows`` (fraction ``min(1, limit / declared_rows)``), or every row.
    Otherwise (replace-one): the first ``limit`` rows, or every row.
    """
    salt = DEFAULT_SALT if salt is None else salt
    if limit is not None:
        limit = check_int("--limit", limit, minimum=1)
    if declared_rows is not None:
        declared_rows = check_int("--rows", declared_rows, minimum=1)
    if not per_record:
        if fraction is not None:
            raise ParameterError("--sample-fraction", fraction, "does not apply under replace-one (the number of "
                                 "records is public there, and a per-record sample would make it private); "
                                 "use --limit N (the first N rows)")
        return RowRule("prefix", limit=limit, declared_rows=declared_rows) if limit is not None else RowRule()
    if fraction is not None:
        if limit is not None:
            raise ParameterError("--sample-fraction", fraction, "give either --sample-fraction or --limit, not both")
        fraction = check_in_range("--sample-fraction", fraction, 0.0, 1.0, low_open=True)
        return RowRule("hash" if fraction < 1 else "all", fraction, salt, None, declared_rows, True, max_rows)
    if limit is None:
        return RowRule(declared_rows=declared_rows, per_record=True, max_rows=max_rows)
    if declared_rows is None:
        raise ParameterError("--limit", limit, "needs --rows M, the number of rows you DECLARE the input has (a "
                             "public number; the file's real row count is private), so that the keep-fraction "
                             "N/M is public; or give --sample-fraction")
    fraction = min(1.0, limit / declared_rows)
    return RowRule("hash" if fraction < 1 else "all", fraction, salt, limit, declared_rows, True, max_rows)
