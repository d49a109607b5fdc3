"""The :class:`Run`: a resumable run in one folder (layout and guarantees: :mod:`dpkit.runs`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from dpkit import io as _io
from dpkit.runs import checkpoints, integrity, lock
from dpkit.runs.checkpoints import check_name
from dpkit.runs.faults import checkpoint
from dpkit.runs.codec import decode, differences, digest, dumps, encode, now, package_versions, sha256
from dpkit.runs.errors import RunCorruptError, RunInUseError, RunMismatchError
from dpkit.runs.ledger import merged
from dpkit.runs.progress_bars import progress
from dpkit.runs.records import RecordLog
from dpkit.validate import ParameterError, check_int

RUN_FORMAT, KEY_FILE = integrity.RUN_FORMAT, integrity.KEY_FILE
FIXED_FIELDS = ("params", "params_digest", "seed", "format", "created", "checksums", "bindings", "tracked", "seal",
                "records", "records_chain")


def _check_key(key: Any) -> str:
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise ParameterError("key", key, "must be a string or an integer identifying the item")
    return str(key)


def _items(items: Mapping | Iterable) -> list[tuple[str, Any]]:
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        pairs = []
        for i, pair in enumerate(items):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ParameterError(f"items[{i}]", pair, "items must be a mapping or (key, item) pairs")
            pairs.append((pair[0], pair[1]))
    out = [(_check_key(k), v) for k, v in pairs]
    keys = [k for k, _ in out]
    if len(set(keys)) != len(keys):
        duplicate = next(k for k in keys if keys.count(k) > 1)
        raise ParameterError("items", duplicate, "keys must be unique")
    return out


class Run:
    """A resumable run in folder ``path`` (created if missing); see :mod:`dpkit.runs`.

    ``params``: the public configuration, everything that determines the output
    (JSON-serializable, finite numbers); ``seed``: the run's seed (None: release
    mode). Both are compared on reopening, through a digest. ``input_digest``: a
    digest of the private input (e.g. :func:`~dpkit.runs.file_digest`), kept in
    ``private/`` and compared on reopening. ``ledger``: a
    :class:`~dpkit.privacy.PrivacyLedger` (or any object with ``to_dict()``); a
    PrivacyLedger is hooked so that each entry is on disk before ``spend``
    returns. ``fsync``: also force each record to disk.
    """

    def __init__(self, path: str | os.PathLike, params: Mapping[str, Any] | None = None, seed: int | None = 0, *,
                 ledger: Any = None, fsync: bool = True, input_digest: str | None = None):
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise ParameterError("path", path, "must be a folder path")
        params = {} if params is None else params
        if not isinstance(params, Mapping):
            raise ParameterError("params", params, "must be a mapping of parameter names to values")
        if input_digest is not None and (not isinstance(input_digest, str) or not input_digest):
            raise ParameterError("input_digest", input_digest, "must be a non-empty digest string or None")
        if ledger is not None and not hasattr(ledger, "to_dict"):
            raise ParameterError("ledger", ledger, "must have to_dict() (a PrivacyLedger) or be None")
        self.path = Path(path)
        self.params = encode(dict(params))
        self.seed = None if seed is None else check_int("seed", seed, minimum=0)
        self.params_digest = digest({"params": self.params, "seed": self.seed})
        self.ledger = ledger
        self.fsync = bool(fsync)
        if self.path.exists() and not self.path.is_dir():
            raise ParameterError("path", str(self.path), "is a file; a run needs a folder")
        self.path.mkdir(parents=True, exist_ok=True)
        self.manifest_path = self.path / integrity.MANIFEST
        self.records_path = self.path / "records.jsonl"
        self.seeds_dir = self.path / "seeds"
        self.private_dir = self.path / "private"
        self.release_dir = self.path / "release"
        self._log = RecordLog(self.records_path, fsync=self.fsync)
        self._records: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._opening = True
        self._replayed: set[str] = set()
        self.manifest: dict = {}
        self._lock_fd = lock.acquire(self.path, self)
        try:
            self._open(input_digest)
        except BaseException:
            self.close()            # a refused or failed opening does not keep the folder locked
            raise
        self._opening = False
        self._hook_ledger()

    @property
    def torn_bytes(self) -> int:
        """Bytes of a torn last record cut off when the run was reopened."""
        return self._log.torn_bytes

    def _open(self, input_digest: str | None) -> None:
        for folder in (self.path, self.seeds_dir, self.private_dir, self.release_dir):
            if folder.is_dir():
                _io.remove_stale_temporaries(folder)
        self.resumed = self.manifest_path.exists()
        if self.resumed:
            self.manifest = integrity.read_manifest(self.path)
            self._check_same(self.manifest, input_digest)
            integrity.verify_checksums(self.path, self.manifest)
            integrity.refuse_extra_files(self.path, self.manifest)
            self._key = integrity.read_key(self.path, self.manifest)
            integrity.verify_seal(self.manifest, self._key)
        else:
            self._refuse_orphans()
            self.manifest = {
                "format": RUN_FORMAT, "params": self.params, "params_digest": self.params_digest,
                "seed": self.seed, "created": now(), "status": "running", "resumes": 0,
                "versions": package_versions(), "backend": None, "ledger": None, "seeds": {}, "records": 0,
                "records_chain": None, "checksums": {}, "tracked": [],
            }
            self._key = self._new_key()
            if input_digest is not None:
                self._write_private("input_digest.json", dumps({"input_digest": input_digest}) + "\n")
        checkpoints.replay_all(self)          # the saved spend is back in the ledger before anything is written
        self._log.load(self.manifest if self.resumed else None)
        self._records = {k: decode(v, self._key) for k, v in self._log.encoded.items()}
        if self.resumed:
            self.manifest["resumes"] = int(self.manifest.get("resumes", 0)) + 1
            self.manifest["status"] = "running"
            versions = package_versions()
            if versions != self.manifest.get("versions"):
                # Allowed (a bug-fix release should not strand a half-done run), but recorded.
                self.manifest.setdefault("versions_on_resume", []).append(versions)
        self._write_manifest()

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Release the folder's lock (also released when the process ends)."""
        if not self._closed:
            self._closed = True
            lock.release(self.path, self)

    def discard_unspent(self) -> bool:
        """Close and remove the folder of a NEW run that charged nothing and wrote no record and no seeds
        (a method refused its input before its first charge), so that a corrected command starts afresh;
        returns whether it was removed. A resumed run, or one with any spend or output, is never removed."""
        entries = (self.manifest.get("ledger") or {}).get("entries") or getattr(self.ledger, "entries", None)
        if self.resumed or self._records or self.manifest.get("seeds") or entries:
            return False
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        return True

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RunInUseError(f"this Run object for {str(self.path)!r} was closed or reopened by a newer "
                                f"Run in this process; use the newer one")

    def _hook_ledger(self) -> None:
        """Write the manifest (ledger included) right after each ledger entry, before ``spend`` returns."""
        if self.ledger is None or not hasattr(self.ledger, "on_record"):
            return
        previous = self.ledger.on_record

        def on_record(ledger: Any) -> None:
            if previous is not None:
                previous(ledger)
            if not self._closed and not self._opening:
                checkpoint("ledger-recorded")
                self._write_manifest()
                checkpoint("ledger-written")

        self.ledger.on_record = on_record

    # ------------------------------------------------------------- private files
    def _write_private(self, name: str, text_or_bytes: str | bytes) -> None:
        raw = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
        self.private_dir.mkdir(parents=True, exist_ok=True)
        path = _io.atomic_write_bytes(self.private_dir / name, raw)
        if name == "mark_key":
            os.chmod(path, 0o600)
        self.manifest.setdefault("checksums", {})[f"private/{name}"] = sha256(raw)

    def _new_key(self) -> bytes:
        key = os.urandom(32)
        self._write_private("mark_key", key)
        return key

    def _refuse_orphans(self) -> None:
        seeds = sorted(p.name for p in self.seeds_dir.glob("*.json")) if self.seeds_dir.is_dir() else []
        has_records = self.records_path.exists() and self.records_path.stat().st_size > 0
        if seeds or has_records:
            held = " and ".join(x for x in ("records" if has_records else "", f"seeds {seeds}" if seeds else "") if x)
            raise RunCorruptError(integrity.MANIFEST, "<missing>",
                                  f"is missing while the folder holds {held}; a new run here would mix with "
                                  f"(or re-spend) the old one. Use a new folder")

    def _check_same(self, manifest: Mapping[str, Any], input_digest: str | None) -> None:
        old_params = manifest.get("params", {})
        if not isinstance(old_params, Mapping):
            raise RunCorruptError(integrity.MANIFEST, "params", "must be a mapping")
        changes = differences(old_params, self.params)
        if manifest.get("seed") != self.seed:
            changes.append(f"seed: {manifest.get('seed')!r} -> {self.seed!r}")
        if not changes and manifest.get("params_digest") != self.params_digest:
            changes.append("params_digest: the stored parameters were edited")
        old_input = self._stored_input_digest()
        if old_input != input_digest:
            changes.append("input: " + ("the input data differ from the run's" if old_input and input_digest
                                        else "input digest " + ("given now, absent before" if input_digest
                                                                else "absent now, given before")))
        if changes:
            raise RunMismatchError(
                "params", "; ".join(changes),
                f"the run folder {str(self.path)!r} holds a run with another configuration or input; resuming "
                f"would mix two runs. Use a new folder, or delete this one to start over")

    def _stored_input_digest(self) -> str | None:
        path = self.private_dir / "input_digest.json"
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))["input_digest"]
        except (ValueError, KeyError, TypeError):
            raise RunCorruptError("private/input_digest.json", str(path), "is unreadable") from None

    # -------------------------------------------------------------- manifest
    def _write_manifest(self) -> None:
        self._check_open()
        self.manifest["updated"] = now()
        self.manifest["records"] = len(self._log.encoded)
        self.manifest["records_chain"] = self._log.head
        if self.ledger is not None:
            self.manifest["ledger"] = merged(self.manifest.get("ledger"), encode(self.ledger.to_dict()))
        self.manifest.setdefault("checksums", {})["ledger"] = digest(self.manifest.get("ledger"))
        self.manifest["seal"] = integrity.manifest_seal(self._key, self.manifest)
        _io.atomic_write_text(self.manifest_path, dumps(self.manifest, indent=2) + "\n")

    def update(self, *, backend: Any = None, **extra: Any) -> None:
        """Record the backend (its ``describe()``) and any extra JSON fields in the manifest."""
        if backend is not None:
            self.manifest["backend"] = encode(backend.describe() if hasattr(backend, "describe") else backend)
        for key, value in extra.items():
            if key in FIXED_FIELDS:
                raise ParameterError(key, value, "is fixed by the run")
            self.manifest[key] = encode(value)
        self._write_manifest()

    def finish(self, *, backend: Any = None, **extra: Any) -> dict:
        """Mark the run complete (after the last record) and return the manifest."""
        self.manifest["status"] = "complete"
        self.update(backend=backend, **extra)
        checkpoint("finished")
        return dict(self.manifest)

    def note(self, message: str) -> None:
        """Add a time-stamped line to the manifest's ``log`` (public words only: no private values)."""
        if not isinstance(message, str):
            raise ParameterError("message", type(message).__name__, "must be text")
        self._check_open()
        self.manifest.setdefault("log", []).append(f"{now()} {message}")
        self._write_manifest()

    def bind(self, name: str, config: Mapping[str, Any], *, input_digest: str | None = None) -> None:
        """Tie a component of the run (a pipeline) to its own public ``config`` and input.

        The first call records ``config`` (in the manifest, with its digest) and
        ``input_digest`` (under ``private/``); a later call -- on resume -- with
        another configuration or input raises :class:`RunMismatchError` naming the
        keys that differ, before the component reuses anything.
        """
        check_name(name)
        if not isinstance(config, Mapping):
            raise ParameterError("config", type(config).__name__, "must be a mapping of public settings")
        if input_digest is not None and (not isinstance(input_digest, str) or not input_digest):
            raise ParameterError("input_digest", input_digest, "must be a non-empty digest string or None")
        self._check_open()
        encoded = encode(dict(config))
        bindings = self.manifest.setdefault("bindings", {})
        # the input's digest is private: the manifest keeps only its HMAC under the run's key
        sealed_input = None if input_digest is None else hmac.new(self._key, input_digest.encode(),
                                                                  hashlib.sha256).hexdigest()
        stored = bindings.get(name)
        if stored is not None:
            changes = differences(stored.get("config", {}), encoded, f"{name}.")
            if not changes and stored.get("digest") != digest(encoded):
                changes.append(f"{name}: the stored configuration was edited")
            if stored.get("input") != sealed_input:
                changes.append(f"{name}.input: the input data differ from the run's")
            if changes:
                raise RunMismatchError("config", "; ".join(changes),
                                       f"the run folder {str(self.path)!r} was started with another configuration "
                                       f"or input for {name!r}; resuming would mix two runs. Use a new folder")
            return
        bindings[name] = {"config": encoded, "digest": digest(encoded), "input": sealed_input}
        self._write_manifest()

    def write_release_file(self, name: str, data: str | bytes) -> Path:
        """Write ``release/<name>`` atomically and record its checksum (verified on every reopening)."""
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ParameterError("name", name, "must be a plain file name")
        if not isinstance(data, (str, bytes)):
            raise ParameterError("data", type(data).__name__, "must be text or bytes")
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self._check_open()
        path = _io.atomic_write_bytes(self.release_dir / name, raw)
        self.manifest.setdefault("checksums", {})[f"release/{name}"] = sha256(raw)
        self._write_manifest()
        return path

    def track(self, folder: str | os.PathLike) -> None:
        """Record the checksums of every file in ``folder`` (e.g. a release written beside the run).

        They are verified whenever the run is reopened (and by :func:`verify_folder`),
        and a file added to ``folder`` later is refused.
        """
        folder = Path(folder)
        if not folder.is_dir():
            raise ParameterError("folder", str(folder), "must be an existing folder")
        self._check_open()
        checksums = self.manifest.setdefault("checksums", {})
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            checksums[os.path.relpath(path, self.path)] = sha256(path.read_bytes())
        relative = os.path.relpath(folder, self.path)
        tracked = self.manifest.setdefault("tracked", [])
        if relative not in tracked and relative != ".":
            tracked.append(relative)
        self._write_manifest()
        checkpoint("release-tracked")

    # --------------------------------------------------------------- records
    def done_keys(self) -> set[str]:
        """Keys of the records already written."""
        return set(self._records)

    def __contains__(self, key: Any) -> bool:
        return _check_key(key) in self._records

    def __len__(self) -> int:
        return len(self._records)

    def records(self) -> dict[str, Any]:
        """All records, by key, in the order they were written."""
        return dict(self._records)

    def append(self, key: Any, record: Any) -> None:
        """Write one finished record (a JSON-serializable value) durably; each key once; thread-safe."""
        key = _check_key(key)
        payload = encode(record, self._key)
        with self._lock:
            self._check_open()
            self._log.append(key, payload)
            self._records[key] = decode(payload, self._key)
        checkpoint("record-appended")

    def pending(self, items: Mapping | Iterable, *, desc: str | None = None) -> Iterator[tuple[str, Any]]:
        """Yield ``(key, item)`` for items without a record, with a progress bar.

        ``items``: a mapping key -> item or an iterable of ``(key, item)``
        pairs; keys (strings or integers, compared as strings) must be unique.
        """
        pairs = _items(items)
        todo = [(k, v) for k, v in pairs if k not in self._records]
        yield from progress(todo, total=len(pairs), initial=len(pairs) - len(todo), desc=desc)

    def pending_batches(self, items: Mapping | Iterable, batch_size: int, *,
                        desc: str | None = None) -> Iterator[list[tuple[str, Any]]]:
        """Like :meth:`pending`, grouped in lists of at most ``batch_size`` pairs."""
        batch_size = check_int("batch_size", batch_size, minimum=1)
        pairs = _items(items)
        todo = [(k, v) for k, v in pairs if k not in self._records]
        batches = [todo[i:i + batch_size] for i in range(0, len(todo), batch_size)]
        yield from progress(batches, desc=desc)

    # ----------------------------------------------------------------- seeds
    def privatized_seeds(self, name: str, compute: Callable[[], Any]) -> Any:
        """The output of the DP computation ``compute()``, computed once per run (see :mod:`dpkit.runs.checkpoints`).

        Call the mechanism -- and spend on the run's ledger -- inside ``compute``;
        its output and the ledger entries it added are saved atomically before
        this returns, and a resumed run gets the saved value back without
        calling ``compute`` (no fresh noise, no second charge).
        """
        return checkpoints.privatized_seeds(self, name, compute)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, records={len(self._records)}, status={self.manifest.get('status')!r})"
