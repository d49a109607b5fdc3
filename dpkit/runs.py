"""Resumable generation runs: records written as they exist, privatized seeds saved first.

A run is a folder::

    manifest.json      parameters and their digest, seed, versions, backend/model, privacy
                       ledger, checksums (ledger, seeds, release files)
    records.jsonl      one {"key": ..., "record": {...}} line per finished item (append-only)
    seeds/<name>.json  each privatized seed set, saved with the ledger entries it cost
    private/           the input digest and the key that seals marks in the run's files
    .lock              held (fcntl) by the one process writing the run

Typical use::

    run = Run("results/kps", params={"epsilon": 4, "n": 100}, seed=0, ledger=ledger,
              input_digest=file_digest("data.csv"))
    phrases = run.privatized_seeds("keyphrases", lambda: sample_keyphrases(..., ledger=ledger))
    for key, prompt in run.pending(prompts):          # skips keys already written
        run.append(key, {"text": backend.generate(prompt)})
    run.finish(backend=backend)

Guarantees:

* **One writer.** Opening a run takes an exclusive ``fcntl`` lock on
  ``<run>/.lock`` for the life of the process (or until :meth:`Run.close`); a
  second process raises :class:`RunInUseError` naming the holder's pid and
  host. The lock dies with its process, so a crashed run's folder is reopened
  at once (its stale lock file is simply taken over).
* **Nothing lost, nothing duplicated.** Each record is one JSON line, flushed
  (and fsynced) before :meth:`Run.append` returns. After a crash the same code
  resumes: :meth:`Run.pending` yields only the keys not yet written,
  :meth:`Run.append` refuses a key twice, and a torn last line is cut off
  (with a warning) when the run is reopened.
* **No privacy budget spent twice, none forgotten.** :meth:`Run.privatized_seeds`
  runs the DP computation once and writes its output *together with* the
  ledger entries it added, in one atomic, self-checking file, before any model
  sees it. On reopening, every saved entry is re-entered in the ledger
  *before* anything is written, so the manifest never shows less spend than
  the folder holds. Seeds are never recomputed once records exist.
* **No mixed runs.** Reopening with other ``params``/``seed`` or another
  ``input_digest`` raises :class:`RunMismatchError` naming the keys that differ.
* **Self-verifying.** The manifest keeps SHA-256 checksums of the ledger, of
  every seeds file and of every file written with :meth:`Run.write_release`;
  a mismatch, a missing or garbled manifest next to existing records/seeds,
  raises :class:`RunCorruptError` -- never a silent re-spend.
* All files are written atomically through :mod:`dpkit.io`. Public/Privatized
  marks survive the round trip through run files only with a valid seal made
  with the run's own key; a record that merely looks like a mark stays a dict.
"""

from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import hashlib
import hmac
import json
import os
import platform
import socket
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from dpkit import io as _io
from dpkit.validate import ParameterError, check_int

RUN_FORMAT = 2
SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
VERSIONED_PACKAGES = ("numpy", "scipy", "torch", "transformers", "openai", "anthropic", "dp-accounting")
MARK_TAG = "__dpkit_mark__"


class RunMismatchError(ParameterError):
    """An existing run folder was opened with different parameters, seed or input."""


class RunCorruptError(ParameterError):
    """A run folder's files do not match their checksums or are unreadable."""


class RunInUseError(RuntimeError):
    """Another process holds the run folder's lock."""


# ------------------------------------------------------------------ encoding
def _mark_hook(key: bytes | None):
    from dpkit.privacy.marks import Privatized, Public, is_sealed

    def hook(value: Any) -> Any:
        if isinstance(value, (Public, Privatized)):
            if not is_sealed(value):
                raise ParameterError("value", type(value).__name__, "is a mark without a valid seal")
            kind = "privatized" if isinstance(value, Privatized) else "public"
            provenance = list(value._provenance) if kind == "privatized" else []
            body = {"kind": kind, "text": str(value), "provenance": provenance}
            if key is None:
                raise ParameterError("value", kind, "marks can be written only in a Run's files")
            return {MARK_TAG: 1, **body, "seal": _mark_seal(key, body)}
        if isinstance(value, Mapping) and MARK_TAG in value:
            raise ParameterError("value", MARK_TAG, "is a key reserved for dpkit's marks")
        return None

    return hook


def _mark_seal(key: bytes, body: Mapping[str, Any]) -> str:
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hmac.new(key, blob, hashlib.sha256).hexdigest()


def _encode(value: Any, key: bytes | None = None) -> Any:
    """JSON-ready copy; marks become sealed tagged objects (needs the run's key)."""
    return _io.to_jsonable(value, hook=_mark_hook(key))


def _decode(value: Any, key: bytes | None = None) -> Any:
    """Inverse of :func:`_encode`: a tagged object becomes a mark again only if its seal is valid."""
    if isinstance(value, dict):
        if MARK_TAG in value:
            return _decode_mark(value, key)
        return {k: _decode(v, key) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, key) for v in value]
    return value


def _decode_mark(value: dict, key: bytes | None) -> Any:
    from dpkit.privacy import marks

    body = {k: value.get(k) for k in ("kind", "text", "provenance")}
    seal = value.get("seal")
    if (key is None or not isinstance(seal, str) or value.get(MARK_TAG) != 1
            or not hmac.compare_digest(seal, _mark_seal(key, body))):
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


def _dumps(value: Any, *, indent: int | None = None) -> str:
    """Canonical JSON of an already encoded value; refuses the value of an API key variable."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, indent=indent, allow_nan=False)
    for variable in SECRET_VARIABLES:
        secret = os.environ.get(variable)
        if secret and len(secret) >= 8:
            forms = {secret, json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1]}
            if any(form in text for form in forms):
                raise RuntimeError(f"refusing to write a run file that contains the value of {variable}")
    return text


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value`` (e.g. a public configuration)."""
    return _sha256(_io.dumps(value).encode("utf-8"))


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes (e.g. the input data of a run; keep it private)."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def package_versions() -> dict[str, str | None]:
    """Versions of Python, dpkit and the packages that shape a generation."""
    from importlib import metadata

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("dpkit",) + VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _verify_checksums(root: Path, manifest: Mapping[str, Any]) -> None:
    checksums = manifest.get("checksums") or {}
    if not isinstance(checksums, Mapping):
        raise RunCorruptError("manifest.json", "checksums", "must be a mapping")
    if "ledger" in checksums and digest(manifest.get("ledger")) != checksums["ledger"]:
        raise RunCorruptError("manifest.json", "ledger", "does not match its checksum: the privacy ledger was edited")
    for name, expected in checksums.items():
        if name == "ledger":
            continue
        path = root / name
        if not path.is_file():
            raise RunCorruptError(name, "<missing>", "is listed in the manifest's checksums but missing")
        if _sha256(path.read_bytes()) != expected:
            raise RunCorruptError(name, "<changed>", "does not match its checksum: the file was edited "
                                  "or damaged; the run cannot be resumed safely")


def verify_folder(path: str | os.PathLike) -> dict:
    """Check a run folder without writing to it; returns its manifest.

    Raises :class:`RunCorruptError` when the manifest is unreadable or a checksummed
    file (ledger, seeds, tracked release files) does not match.
    """
    manifest_path = Path(path) / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RunCorruptError("manifest.json", str(manifest_path),
                              f"is missing or not valid JSON ({type(error).__name__})") from None
    if not isinstance(manifest, dict):
        raise RunCorruptError("manifest.json", str(manifest_path), "is not a dpkit run manifest")
    _verify_checksums(Path(path), manifest)
    return manifest


# ---------------------------------------------------------------------- lock
_HELD: dict[str, tuple[int, "Run"]] = {}
_HELD_LOCK = threading.Lock()


def _acquire(folder: Path, owner: "Run") -> int:
    """The lock fd for ``folder``; a run reopened in this process takes over the earlier object's lock."""
    key = os.path.realpath(folder)
    with _HELD_LOCK:
        if key in _HELD:
            fd, previous = _HELD[key]
            previous._closed = True
            _HELD[key] = (fd, owner)
            return fd
        fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            if error.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise RunInUseError(f"run folder {str(folder)!r} is in use by another process ({holder}); "
                                    f"one process writes a run at a time: wait for it or stop it") from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on host {socket.gethostname()}\n".encode(), 0)
        _HELD[key] = (fd, owner)
        return fd


def _release_lock(folder: Path, owner: "Run") -> None:
    key = os.path.realpath(folder)
    with _HELD_LOCK:
        held = _HELD.get(key)
        if held is None or held[1] is not owner:
            return
        del _HELD[key]
        fd = held[0]
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


# ------------------------------------------------------------------ progress
def progress_enabled() -> bool:
    """Whether :func:`progress` shows a bar.

    On an interactive terminal, and in a Jupyter kernel where ipywidgets is
    installed (tqdm.auto then draws a widget); never in CI (``CI=true``), in logs,
    or in a notebook kernel without widgets (a papermill or book build: the page
    stays clean). ``DPKIT_PROGRESS=1``/``0`` forces them on/off; ``make book``
    sets ``0``.
    """
    forced = os.environ.get("DPKIT_PROGRESS")
    if forced is not None:
        return forced.strip().lower() in ("1", "true", "yes")
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        return False
    if _in_notebook_kernel():
        from importlib.util import find_spec

        return find_spec("ipywidgets") is not None
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _in_notebook_kernel() -> bool:
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress(iterable: Iterable, *, total: int | None = None, desc: str | None = None,
             initial: int = 0) -> Iterable:
    """A ``tqdm.auto`` bar around ``iterable`` when :func:`progress_enabled`, else the iterable itself."""
    if not progress_enabled():
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, initial=initial)


# ----------------------------------------------------------------------- run
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
    """A resumable run in folder ``path`` (created if missing); see the module docstring.

    ``params``: the public configuration, everything that determines the output
    (JSON-serializable, finite numbers); ``seed``: the run's seed. Both are
    compared on reopening, through a digest. ``input_digest``: a digest of the
    private input (e.g. :func:`file_digest`), kept in ``private/`` and compared on
    reopening. ``ledger``: a :class:`~dpkit.privacy.PrivacyLedger` (or any object
    with ``to_dict()``; saved entries are replayed when it also has
    ``entries``/``spend``). ``fsync``: also force each record to disk.
    """

    def __init__(self, path: str | os.PathLike, params: Mapping[str, Any] | None = None, seed: int | None = 0, *,
                 ledger: Any = None, fsync: bool = True, input_digest: str | None = None):
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise ParameterError("path", path, "must be a folder path")
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ParameterError("params", params, "must be a mapping of parameter names to values")
        if input_digest is not None and (not isinstance(input_digest, str) or not input_digest):
            raise ParameterError("input_digest", input_digest, "must be a non-empty digest string or None")
        self.path = Path(path)
        self.params = _encode(dict(params))
        self.seed = None if seed is None else check_int("seed", seed, minimum=0)  # None: release mode, no seed
        self.params_digest = digest({"params": self.params, "seed": self.seed})
        if ledger is not None and not hasattr(ledger, "to_dict"):
            raise ParameterError("ledger", ledger, "must have to_dict() (a PrivacyLedger) or be None")
        self.ledger = ledger
        self.fsync = bool(fsync)
        if self.path.exists() and not self.path.is_dir():
            raise ParameterError("path", str(self.path), "is a file; a run needs a folder")
        self.path.mkdir(parents=True, exist_ok=True)
        self.manifest_path = self.path / "manifest.json"
        self.records_path = self.path / "records.jsonl"
        self.seeds_dir = self.path / "seeds"
        self.private_dir = self.path / "private"
        self.release_dir = self.path / "release"
        self._records: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._replayed: set[str] = set()
        self.torn_bytes = 0
        self._lock_fd = _acquire(self.path, self)
        try:
            self._open(input_digest)
        except BaseException:
            self.close()            # a refused or failed opening does not keep the folder locked
            raise

    def _open(self, input_digest: str | None) -> None:
        for folder in (self.path, self.seeds_dir, self.private_dir, self.release_dir):
            if folder.is_dir():
                _io.remove_stale_temporaries(folder)
        self._key = self._mark_key()
        self.resumed = self.manifest_path.exists()
        if self.resumed:
            self.manifest = self._read_manifest()
            self._check_same(self.manifest, input_digest)
            self._verify(self.manifest)
        else:
            self._refuse_orphans()
            self.manifest = {
                "format": RUN_FORMAT, "params": self.params, "params_digest": self.params_digest,
                "seed": self.seed, "created": _now(), "status": "running", "resumes": 0,
                "versions": package_versions(), "backend": None, "ledger": None, "seeds": {}, "records": 0,
                "checksums": {},
            }
            if input_digest is not None:
                _io.atomic_write_text(self.private_dir / "input_digest.json",
                                      _dumps({"input_digest": input_digest}) + "\n")
        self._replay_all()          # the saved spend is back in the ledger before anything is written
        self._load_records()
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
            _release_lock(self.path, self)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RunInUseError(f"this Run object for {str(self.path)!r} was closed or reopened by a newer "
                                f"Run in this process; use the newer one")

    # -------------------------------------------------------------- opening
    def _mark_key(self) -> bytes:
        path = self.private_dir / "mark_key"
        if path.exists():
            key = path.read_bytes()
            if len(key) != 32:
                raise RunCorruptError("private/mark_key", f"{len(key)} bytes", "must hold the run's 32-byte key")
            return key
        key = os.urandom(32)
        self.private_dir.mkdir(parents=True, exist_ok=True)
        _io.atomic_write_bytes(path, key)
        os.chmod(path, 0o600)
        return key

    def _read_manifest(self) -> dict:
        try:
            manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise RunCorruptError("manifest.json", str(self.manifest_path),
                                  f"is not valid JSON ({type(error).__name__}); the run cannot be resumed safely. "
                                  f"Use a new folder") from None
        if not isinstance(manifest, dict) or "params" not in manifest:
            raise RunCorruptError("manifest.json", str(self.manifest_path), "is not a dpkit run manifest")
        return manifest

    def _refuse_orphans(self) -> None:
        seeds = sorted(p.name for p in self.seeds_dir.glob("*.json")) if self.seeds_dir.is_dir() else []
        has_records = self.records_path.exists() and self.records_path.stat().st_size > 0
        if seeds or has_records:
            raise RunCorruptError("manifest.json", "<missing>",
                                  f"is missing while the folder holds {'records' if has_records else ''}"
                                  f"{' and ' if has_records and seeds else ''}{'seeds ' + str(seeds) if seeds else ''}; "
                                  f"a new run here would mix with (or re-spend) the old one. Use a new folder")

    def _check_same(self, manifest: Mapping[str, Any], input_digest: str | None) -> None:
        old_params, old_seed = manifest.get("params", {}), manifest.get("seed")
        if not isinstance(old_params, Mapping):
            raise RunCorruptError("manifest.json", "params", "must be a mapping")
        new_params = self.params
        changes = [f"{k}: {old_params.get(k, '<absent>')!r} -> {new_params.get(k, '<absent>')!r}"
                   for k in sorted(set(old_params) | set(new_params))
                   if old_params.get(k, "<absent>") != new_params.get(k, "<absent>")]
        if old_seed != self.seed:
            changes.append(f"seed: {old_seed!r} -> {self.seed!r}")
        stored_digest = manifest.get("params_digest")
        if not changes and stored_digest is not None and stored_digest != self.params_digest:
            changes.append("params_digest: the stored parameters were edited")
        old_input = self._stored_input_digest()
        if old_input != input_digest and not (old_input is None and input_digest is None):
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

    def _verify(self, manifest: Mapping[str, Any]) -> None:
        _verify_checksums(self.path, manifest)

    def track(self, folder: str | os.PathLike) -> None:
        """Record the checksums of the files in ``folder`` (e.g. a release written beside the run).

        They are verified whenever the run is reopened (and by :func:`verify_folder`).
        """
        folder = Path(folder)
        if not folder.is_dir():
            raise ParameterError("folder", str(folder), "must be an existing folder")
        self._check_open()
        checksums = self.manifest.setdefault("checksums", {})
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            checksums[os.path.relpath(path, self.path)] = _sha256(path.read_bytes())
        self._write_manifest()

    def _replay_all(self) -> None:
        if not self.seeds_dir.is_dir():
            return
        listed = list((self.manifest.get("seeds") or {}).keys())
        present = sorted(p.stem for p in self.seeds_dir.glob("*.json"))
        for name in listed + [n for n in present if n not in listed]:
            if name not in present:
                raise RunCorruptError(f"seeds/{name}.json", "<missing>",
                                      "is listed in the manifest but missing; recomputing it would re-spend")
            saved = self._read_seeds(name)
            self._replay(saved.get("ledger_entries", []), name)
            self._replayed.add(name)
            self.manifest.setdefault("seeds", {})[name] = {"file": f"seeds/{name}.json",
                                                          "ledger_entries": len(saved.get("ledger_entries", []))}
            self.manifest.setdefault("checksums", {})[f"seeds/{name}.json"] = _sha256(
                (self.seeds_dir / f"{name}.json").read_bytes())

    def _read_seeds(self, name: str) -> dict:
        path = self.seeds_dir / f"{name}.json"
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise RunCorruptError(f"seeds/{name}.json", str(path), "is not valid JSON") from None
        body = {k: v for k, v in saved.items() if k != "digest"} if isinstance(saved, dict) else None
        if body is None or saved.get("digest") != digest(body):
            raise RunCorruptError(f"seeds/{name}.json", str(path),
                                  "does not match its own digest: the saved release or its ledger entries were edited")
        if saved.get("params_digest") != self.params_digest:
            raise RunMismatchError("params", f"seeds/{name}.json",
                                   "was released under another configuration; use a new folder")
        return saved

    # -------------------------------------------------------------- manifest
    def _write_manifest(self) -> None:
        self._check_open()
        self.manifest["updated"] = _now()
        self.manifest["records"] = len(self._records)
        if self.ledger is not None:
            current = _encode(self.ledger.to_dict())
            stored = self.manifest.get("ledger") or {}
            # Never write a ledger that shows less spend than the stored one (e.g. a reopened run whose
            # pipeline has not re-entered its spends yet).
            if len(current.get("entries", [])) >= len((stored or {}).get("entries", []) or []):
                self.manifest["ledger"] = current
        self.manifest.setdefault("checksums", {})["ledger"] = digest(self.manifest.get("ledger"))
        _io.atomic_write_text(self.manifest_path, _dumps(self.manifest, indent=2) + "\n")

    def update(self, *, backend: Any = None, **extra: Any) -> None:
        """Record the backend (its ``describe()``) and any extra JSON fields in the manifest."""
        if backend is not None:
            self.manifest["backend"] = _encode(backend.describe() if hasattr(backend, "describe") else backend)
        for key, value in extra.items():
            if key in ("params", "params_digest", "seed", "format", "created", "checksums", "bindings"):
                raise ParameterError(key, value, "is fixed by the run")
            self.manifest[key] = _encode(value)
        self._write_manifest()

    def finish(self, *, backend: Any = None, **extra: Any) -> dict:
        """Mark the run complete (after the last record) and return the manifest."""
        self.manifest["status"] = "complete"
        self.update(backend=backend, **extra)
        return dict(self.manifest)

    def bind(self, name: str, config: Mapping[str, Any], *, input_digest: str | None = None) -> None:
        """Tie a component of the run (a pipeline) to its own public ``config`` and input.

        The first call records ``config`` (in the manifest, with its digest) and
        ``input_digest`` (under ``private/``); a later call -- on resume -- with
        another configuration or input raises :class:`RunMismatchError` naming the
        keys that differ, before the component reuses anything. So a pipeline is
        protected even when the caller's ``params`` do not mention its settings.
        """
        if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
            raise ParameterError("name", name, "must be a non-empty name of letters, digits, '_' or '-'")
        if not isinstance(config, Mapping):
            raise ParameterError("config", type(config).__name__, "must be a mapping of public settings")
        if input_digest is not None and (not isinstance(input_digest, str) or not input_digest):
            raise ParameterError("input_digest", input_digest, "must be a non-empty digest string or None")
        self._check_open()
        encoded = _encode(dict(config))
        bindings = self.manifest.setdefault("bindings", {})
        inputs_path = self.private_dir / "input_digests.json"
        inputs = json.loads(inputs_path.read_text(encoding="utf-8")) if inputs_path.exists() else {}
        stored = bindings.get(name)
        if stored is not None:
            old = stored.get("config", {})
            changes = [f"{name}.{k}: {old.get(k, '<absent>')!r} -> {encoded.get(k, '<absent>')!r}"
                       for k in sorted(set(old) | set(encoded)) if old.get(k, "<absent>") != encoded.get(k, "<absent>")]
            if not changes and stored.get("digest") != digest(encoded):
                changes.append(f"{name}: the stored configuration was edited")
            if inputs.get(name) != input_digest:
                changes.append(f"{name}.input: the input data differ from the run's")
            if changes:
                raise RunMismatchError("config", "; ".join(changes),
                                       f"the run folder {str(self.path)!r} was started with another configuration "
                                       f"or input for {name!r}; resuming would mix two runs. Use a new folder")
            return
        bindings[name] = {"config": encoded, "digest": digest(encoded)}
        if input_digest is not None:
            inputs[name] = input_digest
            _io.atomic_write_text(inputs_path, _dumps(inputs) + "\n")
        self._write_manifest()

    def write_release(self, name: str, data: str | bytes) -> Path:
        """Write ``release/<name>`` atomically and record its checksum (verified on every reopening)."""
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ParameterError("name", name, "must be a plain file name")
        if not isinstance(data, (str, bytes)):
            raise ParameterError("data", type(data).__name__, "must be text or bytes")
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self._check_open()
        path = _io.atomic_write_bytes(self.release_dir / name, raw)
        self.manifest.setdefault("checksums", {})[f"release/{name}"] = _sha256(raw)
        self._write_manifest()
        return path

    # --------------------------------------------------------------- records
    def _load_records(self) -> None:
        if not self.records_path.exists():
            self.records_path.touch()
            return
        data = self.records_path.read_bytes()
        good = 0
        position = 0
        while position < len(data):
            end = data.find(b"\n", position)
            if end < 0:
                break  # torn last line: no newline was written
            line = data[position:end]
            try:
                entry = json.loads(line.decode("utf-8"))
                key = entry["key"]
                record = entry["record"]
            except (ValueError, KeyError, TypeError):
                if end + 1 >= len(data):
                    break  # a torn last line that happens to end in a newline byte
                raise RunCorruptError("records.jsonl", f"line at byte {position}",
                                      "is corrupt in the middle of the file; the run cannot be resumed safely")
            if key in self._records:
                raise RunCorruptError("records.jsonl", key, "appears twice; the file was edited by hand")
            self._records[key] = _decode(record, self._key)
            position = good = end + 1
        if good < len(data):
            self.torn_bytes = len(data) - good
            warnings.warn(f"{self.records_path}: cut {self.torn_bytes} bytes of a torn last record "
                          f"(an interrupted write); that item will be generated again", stacklevel=3)
            with open(self.records_path, "r+b") as handle:
                handle.truncate(good)

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
        """Write one finished record (a JSON-serializable value) durably; each key once."""
        key = _check_key(key)
        payload = _encode(record, self._key)
        line = _dumps({"key": key, "record": payload}) + "\n"
        with self._lock:  # safe to call from several threads
            self._check_open()
            if key in self._records:
                raise ParameterError("key", key, "already has a record in this run (records are written once)")
            with open(self.records_path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
            self._records[key] = _decode(payload, self._key)

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
        """The output of the DP computation ``compute()``, computed once per run.

        Call the mechanism -- and spend on the run's ledger -- inside
        ``compute``. Its output and the ledger entries it added are written
        atomically to ``seeds/<name>.json`` (with a digest of the file and of the
        run's configuration) before this returns; on reopening the file is
        verified, its entries are re-entered in the ledger at once, and here its
        value is returned without calling ``compute`` (no fresh noise). The
        value returned is the JSON round trip of the output (arrays become
        lists; sealed Public/Privatized marks are kept), the same on the first
        run and on resume. Seeds are never computed for a run that already
        has records (that would be a second release).
        """
        if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
            raise ParameterError("name", name, "must be a non-empty name of letters, digits, '_' or '-'")
        if not callable(compute):
            raise ParameterError("compute", compute, "must be a function of no arguments")
        self._check_open()
        path = self.seeds_dir / f"{name}.json"
        if path.exists():
            saved = self._read_seeds(name)
            if name not in self._replayed:
                self._replay(saved.get("ledger_entries", []), name)
                self._replayed.add(name)
                self._write_manifest()
            return _decode(saved["value"], self._key)
        if self._records:
            raise RunCorruptError(f"seeds/{name}.json", "<missing>",
                                  f"is missing while the run already has {len(self._records)} records; computing "
                                  f"it again would make a second release. Use a new folder")
        before = len(getattr(self.ledger, "entries", [])) if self.ledger is not None else 0
        value = _encode(compute(), self._key)
        entries = list(getattr(self.ledger, "entries", [])[before:]) if self.ledger is not None else []
        body = {"name": name, "created": _now(), "params_digest": self.params_digest, "value": value,
                "ledger_entries": _encode(entries)}
        text = _dumps({**body, "digest": digest(body)}) + "\n"
        _io.atomic_write_text(path, text)
        self._replayed.add(name)
        self.manifest["seeds"][name] = {"file": f"seeds/{name}.json", "ledger_entries": len(entries)}
        self.manifest.setdefault("checksums", {})[f"seeds/{name}.json"] = _sha256(text.encode("utf-8"))
        self._write_manifest()
        return _decode(value, self._key)

    def _replay(self, entries: Sequence[Mapping[str, Any]], name: str) -> None:
        if not entries:
            return
        if self.ledger is None:
            return
        if not hasattr(self.ledger, "spend"):
            raise ParameterError("ledger", self.ledger, f"cannot re-enter the saved spend of seeds {name!r}: "
                                 "it needs spend()/spend_parallel() (use a PrivacyLedger)")
        from dpkit.privacy import PrivacyContract

        for entry in entries:
            contract = PrivacyContract.from_dict(entry["contract"])
            if entry.get("composition") == "parallel":
                self.ledger.spend_parallel(contract, entry["label"], int(entry["groups"]))
            else:
                self.ledger.spend(contract, entry["label"], int(entry["count"]))

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, records={len(self._records)}, status={self.manifest.get('status')!r})"


def generate_records(run: Run, backend: Any, prompts: Mapping | Iterable, *, batch_size: int = 1,
                     make_record: Callable[[str, Any, str], Any] | None = None, desc: str | None = None,
                     **generation: Any) -> dict[str, Any]:
    """Generate every pending prompt with ``backend`` and append its record; return all records.

    ``make_record(key, prompt, text)`` builds the record (default ``{"text": text}``:
    prompts are not stored, since a local run's prompt may be private).
    ``generation`` goes to ``backend.generate_batch`` (``max_new_tokens``,
    ``temperature``, ``seed``...). Records are appended as each batch finishes.
    """
    for batch in run.pending_batches(prompts, batch_size, desc=desc):
        texts = backend.generate_batch([prompt for _, prompt in batch], **generation)
        for (key, prompt), text in zip(batch, texts):
            run.append(key, make_record(key, prompt, text) if make_record else {"text": text})
    run.update(backend=backend)
    return run.records()
