"""Resumable generation runs: records written as they exist, privatized seeds saved first.

A run is a folder::

    manifest.json      parameters, seed, package versions, backend/model, privacy ledger
    records.jsonl      one {"key": ..., "record": {...}} line per finished item (append-only)
    seeds/<name>.json  each privatized seed set, saved with the ledger entries it cost

Typical use::

    run = Run("results/kps", params={"epsilon": 4, "n": 100}, seed=0, ledger=ledger)
    phrases = run.privatized_seeds("keyphrases", lambda: sample_keyphrases(..., ledger=ledger))
    for key, prompt in run.pending(prompts):          # skips keys already written
        run.append(key, {"text": backend.generate(prompt)})
    run.finish(backend=backend)

Guarantees:

* **Nothing lost, nothing duplicated.** Each record is one JSON line, flushed
  (and fsynced) before :meth:`Run.append` returns. After a crash or Ctrl-C the
  same code resumes: :meth:`Run.pending` yields only the keys not yet written,
  :meth:`Run.append` refuses a key twice, and a torn last line (a kill in the
  middle of a write) is cut off when the run is reopened.
* **No privacy budget spent twice.** :meth:`Run.privatized_seeds` runs the DP
  computation once, and writes its output *together with* the ledger entries
  it added, in one atomic file, before any model sees it. On resume the saved
  output is returned, the mechanism is not run again (no fresh noise), and the
  saved entries are re-entered in the in-memory ledger, so the ledger reports
  exactly the spend of an uninterrupted run.
* **No mixed runs.** Reopening a folder with different ``params`` or ``seed``
  raises :class:`RunMismatchError` naming what changed.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from dpkit.validate import ParameterError, check_int

RUN_FORMAT = 1
SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
VERSIONED_PACKAGES = ("numpy", "scipy", "torch", "transformers", "openai", "anthropic", "dp-accounting")


class RunMismatchError(ParameterError):
    """An existing run folder was opened with different parameters or seed."""


# ------------------------------------------------------------------ encoding
def _encode(value: Any) -> Any:
    """JSON-ready copy; Public/Privatized marks survive as tagged objects."""
    from dpkit.backends.guard import Privatized, Public

    if isinstance(value, Privatized):
        return {"__privatized__": str(value), "provenance": value.provenance}
    if isinstance(value, Public):
        return {"__public__": str(value)}
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist") and type(value).__module__.startswith("numpy"):
        return _encode(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "to_dict"):
        return _encode(value.to_dict())
    raise ParameterError("value", value, "must be JSON-serializable (dicts, lists, strings, numbers, arrays)")


def _decode(value: Any) -> Any:
    from dpkit.backends.guard import Privatized, Public

    if isinstance(value, dict):
        if set(value) == {"__privatized__", "provenance"}:
            return Privatized(value["__privatized__"], sources=value["provenance"])
        if set(value) == {"__public__"}:
            return Public(value["__public__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _dumps(value: Any, **kw) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, **kw)
    for variable in SECRET_VARIABLES:
        secret = os.environ.get(variable)
        if secret and len(secret) >= 8 and secret in text:
            raise RuntimeError(f"refusing to write a run file that contains the value of {variable}")
    return text


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


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
    """A resumable run in folder ``path`` (created if missing).

    ``params``: everything that determines the output (JSON-serializable); ``seed``:
    the run's seed. Both are compared on reopening. ``ledger``: a
    :class:`~dpkit.privacy.PrivacyLedger` (or any object with ``to_dict()``;
    entries are replayed on resume when it also has ``entries``/``spend``).
    ``fsync``: also force each record to disk (survives a power cut, not only a
    killed process).
    """

    def __init__(self, path: str | os.PathLike, params: Mapping[str, Any] | None = None, seed: int | None = 0, *,
                 ledger: Any = None, fsync: bool = True):
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise ParameterError("path", path, "must be a folder path")
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ParameterError("params", params, "must be a mapping of parameter names to values")
        self.path = Path(path)
        self.params = _encode(dict(params))
        self.seed = None if seed is None else check_int("seed", seed, minimum=0)  # None: release mode, no seed
        if ledger is not None and not hasattr(ledger, "to_dict"):
            raise ParameterError("ledger", ledger, "must have to_dict() (a PrivacyLedger) or be None")
        self.ledger = ledger
        self.fsync = bool(fsync)
        self.path.mkdir(parents=True, exist_ok=True)
        self.manifest_path = self.path / "manifest.json"
        self.records_path = self.path / "records.jsonl"
        self.seeds_dir = self.path / "seeds"
        self._records: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.torn_bytes = 0
        self.resumed = self.manifest_path.exists()
        if self.resumed:
            self.manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            self._check_same(self.manifest)
            self.manifest["resumes"] = int(self.manifest.get("resumes", 0)) + 1
            self.manifest["status"] = "running"
            versions = package_versions()
            if versions != self.manifest.get("versions"):
                # Allowed (a bug-fix release should not strand a half-done run), but recorded.
                self.manifest.setdefault("versions_on_resume", []).append(versions)
        else:
            self.manifest = {
                "format": RUN_FORMAT, "params": self.params, "seed": self.seed, "created": _now(),
                "status": "running", "resumes": 0, "versions": package_versions(),
                "backend": None, "ledger": None, "seeds": {}, "records": 0,
            }
        self._load_records()
        self._write_manifest()

    # -------------------------------------------------------------- manifest
    def _check_same(self, manifest: Mapping[str, Any]) -> None:
        old_params, old_seed = manifest.get("params", {}), manifest.get("seed")
        new_params = json.loads(_dumps(self.params))
        changes = [f"{k}: {old_params.get(k, '<absent>')!r} -> {new_params.get(k, '<absent>')!r}"
                   for k in sorted(set(old_params) | set(new_params))
                   if old_params.get(k, "<absent>") != new_params.get(k, "<absent>")]
        if old_seed != self.seed:
            changes.append(f"seed: {old_seed!r} -> {self.seed!r}")
        if changes:
            raise RunMismatchError(
                "params", "; ".join(changes),
                f"the run folder {str(self.path)!r} holds a run with other parameters; resuming would mix "
                f"two runs. Use a new folder, or delete this one to start over")

    def _write_manifest(self) -> None:
        self.manifest["updated"] = _now()
        self.manifest["records"] = len(self._records)
        if self.ledger is not None:
            self.manifest["ledger"] = _encode(self.ledger.to_dict())
        _atomic_write(self.manifest_path, _dumps(self.manifest, indent=2) + "\n")

    def update(self, *, backend: Any = None, **extra: Any) -> None:
        """Record the backend (its ``describe()``) and any extra JSON fields in the manifest."""
        if backend is not None:
            self.manifest["backend"] = _encode(backend.describe() if hasattr(backend, "describe") else backend)
        for key, value in extra.items():
            if key in ("params", "seed", "format", "created"):
                raise ParameterError(key, value, "is fixed when the run is created")
            self.manifest[key] = _encode(value)
        self._write_manifest()

    def finish(self, *, backend: Any = None, **extra: Any) -> dict:
        """Mark the run complete (after the last record) and return the manifest."""
        self.manifest["status"] = "complete"
        self.update(backend=backend, **extra)
        return dict(self.manifest)

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
                raise ParameterError("records.jsonl", f"line at byte {position}",
                                     "is corrupt in the middle of the file; the run cannot be resumed safely")
            if key in self._records:
                raise ParameterError("records.jsonl", key, "appears twice; the file was edited by hand")
            self._records[key] = _decode(record)
            position = good = end + 1
        if good < len(data):
            self.torn_bytes = len(data) - good
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
        payload = _encode(record)
        line = _dumps({"key": key, "record": payload}) + "\n"
        with self._lock:  # safe to call from several threads
            if key in self._records:
                raise ParameterError("key", key, "already has a record in this run (records are written once)")
            with open(self.records_path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
            self._records[key] = _decode(payload)

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
        atomically to ``seeds/<name>.json`` before this returns; on resume the
        file is read back, ``compute`` is not called, and the entries are
        re-entered in the ledger. The value returned is the JSON round trip of
        the output (arrays become lists; Public/Privatized marks are kept), the
        same on the first run and on resume.
        """
        if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
            raise ParameterError("name", name, "must be a non-empty name of letters, digits, '_' or '-'")
        if not callable(compute):
            raise ParameterError("compute", compute, "must be a function of no arguments")
        path = self.seeds_dir / f"{name}.json"
        if path.exists():
            saved = json.loads(path.read_text(encoding="utf-8"))
            self._replay(saved.get("ledger_entries", []), name)
            self._write_manifest()
            return _decode(saved["value"])
        before = len(getattr(self.ledger, "entries", [])) if self.ledger is not None else 0
        value = _encode(compute())
        entries = list(getattr(self.ledger, "entries", [])[before:]) if self.ledger is not None else []
        saved = {"name": name, "created": _now(), "value": value, "ledger_entries": _encode(entries)}
        _atomic_write(path, _dumps(saved) + "\n")
        self.manifest["seeds"][name] = {"file": f"seeds/{name}.json", "ledger_entries": len(entries)}
        self._write_manifest()
        return _decode(value)

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
