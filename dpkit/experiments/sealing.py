"""Integrity of stored comparison cells: a SHA-256 digest anyone can check, a seal only its writer can.

Every cell carries a SHA-256 digest of its own content (:func:`content_digest`:
the canonical JSON without ``digest`` and ``seal``) and a ``seal``
(:func:`seal`): HMAC-SHA-256 of that content under the writing user's results
key (:func:`results_key`, in the dpkit cache, never in a results folder) with
the key's public id (:func:`key_id`).

What that checks, exactly (:func:`integrity_problem`): anyone can check the
digest (accidental damage); only the user who wrote a cell can check its seal,
which an edit that recomputes the digest breaks; and the cache records which
cells each key sealed (:func:`register_sealed`, :func:`sealed_here`), so
removing a seal, or changing its key id, does not turn a cell this user sealed
into an unsealed one. The committed ``results/compare`` cells were sealed on
the machine that made them (or not sealed: written before seals), so for
everyone else they are checked for accidental corruption only; their
authenticity is the repository's history, not dpkit's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path

from dpkit.io import atomic_write_bytes
from dpkit.runs.codec import digest, keyed_digest
from dpkit.runtime import cache_dir


def content_digest(body: dict) -> str:
    """The SHA-256 digest of a cell's canonical JSON, without its ``digest`` and ``seal``."""
    return digest({k: v for k, v in body.items() if k not in ("digest", "seal")})


KEY_NAME = "results.key"  # in the user's dpkit cache (dpkit.runtime.cache_dir()), never in a results folder


def results_key(*, create: bool = False) -> bytes | None:
    """This user's key for sealing stored cells (32 random bytes, mode 0600), or None when there is none yet.

    It lives in the dpkit cache, outside every results folder: a folder (and a
    commit of it) carries seals but never the key that makes them.
    """
    path = cache_dir() / KEY_NAME
    if path.is_file():
        return path.read_bytes()
    if not create:
        return None
    atomic_write_bytes(path, os.urandom(32))
    os.chmod(path, 0o600)
    return path.read_bytes()


def key_id(key: bytes) -> str:
    """A public name of a key (the first 16 hex digits of its SHA-256), stored beside each seal."""
    return hashlib.sha256(key).hexdigest()[:16]


def seal(body: dict, key: bytes) -> dict:
    """``{"key_id", "hmac"}``: HMAC-SHA-256 under ``key`` of the cell's canonical JSON (without digest and seal)."""
    return {"key_id": key_id(key), "hmac": keyed_digest(key, {k: v for k, v in body.items()
                                                               if k not in ("digest", "seal")})}


def integrity_problem(body, key: bytes | None = None, *, sealed_by_key: bool = False) -> str | None:
    """Why a stored cell's content cannot be trusted (None when it can): its SHA-256 digest does not match
    (an accident or an edit), or its seal under this user's ``key`` does not (an edit that recomputed the
    digest), or it has no seal under ``key`` although ``key`` sealed it (``sealed_by_key``, :func:`sealed_here`:
    the seal was removed or its key id changed). A cell of any other folder sealed
    under another key, or not sealed (written on another machine, e.g. the committed results), can only be
    checked by its digest: for accidental corruption, not an editor."""
    if not isinstance(body, dict) or body.get("digest") != content_digest(body):
        return "its SHA-256 digest does not match its content (edited or damaged)"
    stored = body.get("seal")
    if key is not None and sealed_by_key and not (isinstance(stored, dict) and stored.get("key_id") == key_id(key)):
        return ("it carries no seal under your results key, although you sealed it (the seal was removed or "
                "its key id changed)")
    if key is not None and isinstance(stored, dict) and stored.get("key_id") == key_id(key):
        if not isinstance(stored.get("hmac"), str) or not hmac.compare_digest(stored["hmac"],
                                                                              seal(body, key)["hmac"]):
            return "its seal under your results key does not match (edited, and the digest recomputed)"
    return None


SEALED_CELLS = "results-sealed.json"  # in the dpkit cache beside the key: the cells each key sealed, by folder


def _sealed_registry() -> dict:
    try:
        registry = json.loads((cache_dir() / SEALED_CELLS).read_text())
    except (OSError, ValueError):
        return {}
    return registry if isinstance(registry, dict) else {}


def register_sealed(path: Path, key: bytes) -> None:
    """Record (in the dpkit cache, never in the results folder) that ``key`` sealed the cell file ``path``."""
    registry = _sealed_registry()
    folder = registry.setdefault(str(Path(path).parent.resolve()), {})
    if folder.get(Path(path).name) != key_id(key):
        folder[Path(path).name] = key_id(key)
        atomic_write_bytes(cache_dir() / SEALED_CELLS, json.dumps(registry, indent=1, sort_keys=True).encode())


def sealed_here(folder: Path, key: bytes | None) -> set[str]:
    """The cell files of ``folder`` this user sealed under ``key`` (:func:`register_sealed`): each of them must
    still carry that seal. Cells written elsewhere (the committed results, a colleague's) are not among them."""
    if key is None:
        return set()
    names = _sealed_registry().get(str(Path(folder).resolve()), {})
    return {name for name, kid in names.items() if kid == key_id(key)} if isinstance(names, dict) else set()
