"""How a run's values become bytes: canonical JSON, sealed marks, digests.

* :func:`encode` turns a value into JSON-ready data; a
  :class:`~dpkit.privacy.marks.Public`/:class:`~dpkit.privacy.marks.Privatized`
  mark becomes a tagged object sealed with the run's key (HMAC-SHA-256), so a
  record that merely looks like a mark stays a dict when read back.
* :func:`decode` is its inverse: a tagged object becomes a mark again only if
  its seal is valid (:class:`~dpkit.runs.errors.RunCorruptError` otherwise).
* :func:`dumps` is canonical JSON that refuses to hold the value of an API key
  variable. :func:`digest` and :func:`file_digest` are SHA-256 digests;
  :func:`keyed_digest` is an HMAC-SHA-256 under the run's key.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import os
import platform
from importlib import metadata
from typing import Any, Mapping

from dpkit import io as _io
from dpkit.privacy import marks
from dpkit.privacy.marks import Privatized, Public, is_sealed
from dpkit.runs.errors import RunCorruptError
from dpkit.validate import ParameterError

SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
VERSIONED_PACKAGES = ("numpy", "scipy", "torch", "transformers", "openai", "anthropic", "dp-accounting")
MARK_TAG = "__dpkit_mark__"


def _mark_hook(key: bytes | None):
    def hook(value: Any) -> Any:
        if isinstance(value, (Public, Privatized)):
            if not is_sealed(value):
                raise ParameterError("value", type(value).__name__, "is a mark without a valid seal")
            kind = "privatized" if isinstance(value, Privatized) else "public"
            provenance = list(value._provenance) if kind == "privatized" else []
            body = {"kind": kind, "text": str(value), "provenance": provenance}
            if key is None:
                raise ParameterError("value", kind, "marks can be written only in a Run's files")
            return {MARK_TAG: 1, **body, "seal": mark_seal(key, body)}
        if isinstance(value, Mapping) and MARK_TAG in value:
            raise ParameterError("value", MARK_TAG, "is a key reserved for dpkit's marks")
        return None

    return hook


def mark_seal(key: bytes, body: Mapping[str, Any]) -> str:
    """HMAC-SHA-256 of a mark's canonical JSON under the run's key."""
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hmac.new(key, blob, hashlib.sha256).hexdigest()


def encode(value: Any, key: bytes | None = None) -> Any:
    """JSON-ready copy; marks become sealed tagged objects (needs the run's key)."""
    return _io.to_jsonable(value, hook=_mark_hook(key))


def decode(value: Any, key: bytes | None = None) -> Any:
    """Inverse of :func:`encode`: a tagged object becomes a mark again only if its seal is valid."""
    if isinstance(value, dict):
        if MARK_TAG in value:
            return _decode_mark(value, key)
        return {k: decode(v, key) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v, key) for v in value]
    return value


def _decode_mark(value: dict, key: bytes | None) -> Any:
    body = {k: value.get(k) for k in ("kind", "text", "provenance")}
    seal = value.get("seal")
    if (key is None or not isinstance(seal, str) or value.get(MARK_TAG) != 1
            or not hmac.compare_digest(seal, mark_seal(key, body))):
        raise RunCorruptError("mark", str(body.get("kind")),
                              "in a run file has no valid seal (edited, or copied from another run)")
    if body["kind"] == "public" and isinstance(body["text"], str):
        return marks.Public(body["text"])
    provenance = body["provenance"]
    if body["kind"] != "privatized" or not isinstance(provenance, list) or not provenance:
        raise RunCorruptError("mark", str(body.get("kind")), "is not a valid Public/Privatized record")
    for entry in provenance:
        marks.check_provenance(json.loads(entry))
    return marks._issue_privatized(body["text"], tuple(provenance))


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Canonical JSON of an already encoded value; refuses the value of an API key variable."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, indent=indent, allow_nan=False)
    for variable in SECRET_VARIABLES:
        secret = os.environ.get(variable)
        if secret and len(secret) >= 8:
            forms = {secret, json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1]}
            if any(form in text for form in forms):
                raise RuntimeError(f"refusing to write a run file that contains the value of {variable}")
    return text


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value`` (e.g. a public configuration)."""
    return sha256(_io.dumps(value).encode("utf-8"))


def keyed_digest(key: bytes, value: Any) -> str:
    """HMAC-SHA-256 under a run's key of the canonical JSON of ``value``: a digest an editor cannot recompute."""
    return hmac.new(key, _io.dumps(value).encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes (e.g. the input data of a run; keep it private)."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def package_versions() -> dict[str, str | None]:
    """Versions of Python, dpkit and the packages that shape a generation."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("dpkit",) + VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``key: old -> new`` for every key whose value differs (nested mappings by dotted key).

    The input file's digest (``input_sha256``) is named, never printed.
    """
    out = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, "<absent>"), new.get(key, "<absent>")
        if before == after:
            continue
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            out += differences(before, after, f"{prefix}{key}.")
        elif key == "input_sha256":
            out.append("the input file's content (its SHA-256 differs)")
        else:
            out.append(f"{prefix}{key}: {before!r} -> {after!r}")
    return out


def now() -> str:
    """The current UTC time, to the second (ISO 8601)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
