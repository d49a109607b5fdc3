"""Every stored byte of a run folder is checked: :func:`verify_folder` and the checks a reopening runs.

What covers what (all SHA-256):

* ``records.jsonl``: a hash chain over the lines (:mod:`dpkit.runs.records`),
  anchored in the manifest (count and last chain value);
* ``seeds/*.json``, ``private/*`` (the mark key, the input digest) and every
  file of a tracked folder (the release): a checksum each in the manifest's
  ``checksums``; a seeds file also carries its own digest (an HMAC under the
  run's key), so one written just before a crash (not yet in the manifest) is
  checked when the run resumes;
* the ledger: the checksum of its canonical JSON (``checksums["ledger"]``);
* the manifest itself: it must parse and hold the run's fields, and it is
  SEALED: ``seal`` is HMAC-SHA-256 of its canonical JSON (every field but the
  seal) under the run's key ``private/mark_key`` (32 random bytes, mode 0600).
  The seal binds the parameters (also checked against ``params_digest``), the
  ledger, every checksum above and the records' chain head, so an edit that
  recomputes the plain SHA-256 digests and the chain is still refused.

What the seal resists, exactly: anyone who can change files of the folder but
not read ``private/mark_key``, or who edits without it (a re-digested file, a
re-chained record, an edited ``params`` field). Anyone who can read the key can
forge a seal: keep ``private/`` private. A missing key or seal is refused.

A file in the folder (or in a tracked folder) that the manifest does not know
is refused too, so nothing can be slipped in. Only ``.lock`` and ``.tmp-*``
files (an interrupted atomic write, removed on reopening) are allowed beside.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import hmac

from dpkit.io import TEMP_PREFIX
from dpkit.runs.codec import digest, keyed_digest, sha256
from dpkit.runs.errors import RunCorruptError
from dpkit.runs.records import NAME as RECORDS, read_records

MANIFEST = "manifest.json"
KEY_FILE = "private/mark_key"
RUN_FORMAT = 4  # 4: the manifest is sealed under the run's key (3: unsealed)
UNCHECKED = (".lock",)


def manifest_seal(key: bytes, manifest: Mapping[str, Any]) -> str:
    """HMAC-SHA-256 under the run's key of the manifest's canonical JSON, without its ``seal`` field."""
    return keyed_digest(key, {k: v for k, v in manifest.items() if k != "seal"})


def read_key(root: Path, manifest: Mapping[str, Any]) -> bytes:
    """The run's key (``private/mark_key``); RunCorruptError when it is missing or not listed."""
    path = root / KEY_FILE
    if KEY_FILE not in (manifest.get("checksums") or {}) or not path.is_file():
        raise RunCorruptError(KEY_FILE, "<missing>", "is missing: the run's seals cannot be checked; a new key "
                              "would not open them. Use a new folder")
    return path.read_bytes()


def verify_seal(manifest: Mapping[str, Any], key: bytes) -> None:
    """The manifest's seal matches its content under ``key``, and its parameters match ``params_digest``."""
    seal = manifest.get("seal")
    if not isinstance(seal, str) or not hmac.compare_digest(seal, manifest_seal(key, manifest)):
        raise RunCorruptError(MANIFEST, "seal", "does not match the manifest under the run's key "
                              f"({KEY_FILE}): the manifest (its parameters, ledger, checksums or records' chain "
                              "head) was edited; the run cannot be resumed safely. Use a new folder")
    if digest({"params": manifest.get("params"), "seed": manifest.get("seed")}) != manifest.get("params_digest"):
        raise RunCorruptError(MANIFEST, "params", "do not match params_digest: the stored parameters were edited")


def read_manifest(root: Path) -> dict:
    """The parsed manifest of the run in ``root``; RunCorruptError names the file when it is unusable."""
    path = root / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RunCorruptError(MANIFEST, str(path), f"is missing or not valid JSON ({type(error).__name__}); "
                              f"the run cannot be resumed safely. Use a new folder") from None
    if not isinstance(manifest, dict) or "params" not in manifest:
        raise RunCorruptError(MANIFEST, str(path), "is not a dpkit run manifest")
    if manifest.get("format") != RUN_FORMAT:
        raise RunCorruptError(MANIFEST, f"format {manifest.get('format')!r}", "was written by another dpkit run "
                              f"format (this one checks every record and seals the manifest: format {RUN_FORMAT}); "
                              "finish it with the dpkit that started it, or use a new folder")
    return manifest


def verify_checksums(root: Path, manifest: Mapping[str, Any]) -> None:
    """The ledger and every checksummed file match; no file is missing."""
    checksums = manifest.get("checksums") or {}
    if not isinstance(checksums, Mapping):
        raise RunCorruptError(MANIFEST, "checksums", "must be a mapping")
    if digest(manifest.get("ledger")) != checksums.get("ledger"):
        raise RunCorruptError(MANIFEST, "ledger", "does not match its checksum: the privacy ledger was edited")
    for name, expected in checksums.items():
        if name == "ledger":
            continue
        path = root / name
        if not path.is_file():
            raise RunCorruptError(name, "<missing>", f"is listed in {MANIFEST}'s checksums but missing")
        if sha256(path.read_bytes()) != expected:
            raise RunCorruptError(name, "<changed>", "does not match its checksum: the file was edited, truncated "
                                  "or damaged; the run cannot be resumed safely")


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if not p.is_dir())


def refuse_extra_files(root: Path, manifest: Mapping[str, Any]) -> None:
    """No file in the run folder, or in a tracked folder, that the manifest does not account for."""
    known = {MANIFEST, RECORDS} | set(manifest.get("checksums") or {})
    running = manifest.get("status") != "complete"
    folders = [root] + [root / f for f in manifest.get("tracked") or []]
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in _files(folder):
            name = os.path.relpath(path, root)
            if path.name in UNCHECKED or path.name.startswith(TEMP_PREFIX) or name in known:
                continue
            if running and path.parent == root / "seeds" and path.suffix == ".json":
                continue    # self-checking; saved just before a crash (read and checked on resume)
            raise RunCorruptError(name, "<extra>", "is in the run folder but not in its manifest: the folder "
                                  "was changed by hand; remove the file or use a new folder")


def verify_folder(path: str | os.PathLike) -> dict:
    """Check a run folder without writing to it; returns its manifest.

    Raises :class:`RunCorruptError`, naming the file, when the manifest is
    unreadable or its seal or ``params_digest`` does not match (an edited field),
    a record breaks the hash chain, a checksummed file (ledger, seeds, keys,
    input digests, log, tracked release files) is changed, missing or truncated,
    or a file the manifest does not know is present.
    """
    root = Path(path)
    manifest = read_manifest(root)
    verify_checksums(root, manifest)
    verify_seal(manifest, read_key(root, manifest))
    refuse_extra_files(root, manifest)
    _, _, torn = read_records(root / RECORDS, manifest)
    if torn and manifest.get("status") == "complete":
        raise RunCorruptError(RECORDS, f"{torn} bytes", "end in a partial line although the run is complete")
    return manifest
