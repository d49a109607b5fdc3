"""Privatized seeds: a DP computation's output saved once, with the ledger entries it cost.

Functions of a :class:`~dpkit.runs.Run` (``run``), which calls them; this module
sits below ``run.py`` and does not import it.

``seeds/<name>.json`` holds the output (sealed marks kept), the ledger entries
the computation added, the run's parameter digest and a digest of the whole
file (HMAC-SHA-256 under the run's key, so an edited and re-digested file is
refused). It is written atomically before :func:`privatized_seeds` returns, so before any model sees the output; the entries themselves reached the manifest
earlier still, as each was spent (:mod:`dpkit.runs.ledger`). On reopening,
every seeds file is verified and its entries are re-entered in the ledger
before anything is written (:func:`replay_all`); the saved value is returned
without computing it again. Seeds are never computed for a run that already has
records: that would be a second release.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from dpkit import io as _io
from dpkit.runs.codec import decode, dumps, encode, keyed_digest, now, sha256
from dpkit.runs.errors import RunCorruptError, RunMismatchError
from dpkit.runs.faults import checkpoint
from dpkit.runs.ledger import replay
from dpkit.validate import ParameterError


def check_name(name: Any) -> str:
    """``name`` if it is a non-empty name of letters, digits, '_' or '-' (a seeds file or a binding)."""
    if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ParameterError("name", name, "must be a non-empty name of letters, digits, '_' or '-'")
    return name


def privatized_seeds(run: Any, name: str, compute: Callable[[], Any]) -> Any:
    """``compute()``'s output for ``run``, computed once (see the module docstring).

    The value returned is the JSON round trip of the output (arrays become
    lists; sealed Public/Privatized marks are kept), the same on the first run
    and on resume.
    """
    check_name(name)
    if not callable(compute):
        raise ParameterError("compute", compute, "must be a function of no arguments")
    run._check_open()
    path = run.seeds_dir / f"{name}.json"
    if path.exists():
        saved = read_seeds(run, name)
        if name not in run._replayed:
            replay(run.ledger, saved.get("ledger_entries", []), name)
            run._replayed.add(name)
            run._write_manifest()
        return decode(saved["value"], run._key)
    if run._records:
        raise RunCorruptError(f"seeds/{name}.json", "<missing>",
                              f"is missing while the run already has {len(run._records)} records; computing "
                              f"it again would make a second release. Use a new folder")
    before = len(getattr(run.ledger, "entries", [])) if run.ledger is not None else 0
    value = encode(compute(), run._key)
    entries = list(getattr(run.ledger, "entries", [])[before:]) if run.ledger is not None else []
    body = {"name": name, "created": now(), "params_digest": run.params_digest, "value": value,
            "ledger_entries": encode(entries)}
    text = dumps({**body, "digest": keyed_digest(run._key, body)}) + "\n"
    _io.atomic_write_text(path, text)
    checkpoint("seeds-written")
    run._replayed.add(name)
    run.manifest["seeds"][name] = {"file": f"seeds/{name}.json", "ledger_entries": len(entries)}
    run.manifest.setdefault("checksums", {})[f"seeds/{name}.json"] = sha256(text.encode("utf-8"))
    run._write_manifest()
    return decode(value, run._key)


def replay_all(run: Any) -> None:
    """Verify every seeds file of ``run`` and re-enter its ledger entries (on opening, before any write)."""
    if not run.seeds_dir.is_dir():
        return
    listed = list((run.manifest.get("seeds") or {}).keys())
    present = sorted(p.stem for p in run.seeds_dir.glob("*.json"))
    for name in listed + [n for n in present if n not in listed]:
        if name not in present:
            raise RunCorruptError(f"seeds/{name}.json", "<missing>",
                                  "is listed in the manifest but missing; recomputing it would re-spend")
        saved = read_seeds(run, name)       # self-checking: its own digest and the run's params digest
        replay(run.ledger, saved.get("ledger_entries", []), name)
        run._replayed.add(name)
        run.manifest.setdefault("seeds", {})[name] = {"file": f"seeds/{name}.json",
                                                     "ledger_entries": len(saved.get("ledger_entries", []))}
        # a seeds file written just before a crash is not in the checksums yet: add it
        run.manifest.setdefault("checksums", {}).setdefault(
            f"seeds/{name}.json", sha256((run.seeds_dir / f"{name}.json").read_bytes()))


def read_seeds(run: Any, name: str) -> dict:
    """The verified content of ``seeds/<name>.json``; RunCorruptError/RunMismatchError name the file."""
    path = run.seeds_dir / f"{name}.json"
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise RunCorruptError(f"seeds/{name}.json", str(path), "is not valid JSON") from None
    body = {k: v for k, v in saved.items() if k != "digest"} if isinstance(saved, dict) else None
    if body is None or saved.get("digest") != keyed_digest(run._key, body):
        raise RunCorruptError(f"seeds/{name}.json", str(path),
                              "does not match its own digest: the saved release or its ledger entries were edited")
    if saved.get("params_digest") != run.params_digest:
        raise RunMismatchError("params", f"seeds/{name}.json",
                               "was released under another configuration; use a new folder")
    return saved
