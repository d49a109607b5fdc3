"""Writing files safely: one atomic writer and one numpy-aware JSON encoder for all of dpkit.

Guarantees:

* :func:`atomic_write_text` / :func:`atomic_write_bytes` / :func:`atomic_path`
  (and :func:`atomic_folder` for a whole folder) never leave a half-written target: the data go to a temporary file in the
  same folder (``.tmp-*``), are flushed and fsynced, then renamed over the
  target (``os.replace`` is atomic on POSIX). A crash leaves either the old
  file or the new one, plus at most a stray ``.tmp-*`` file
  (:func:`remove_stale_temporaries` cleans those up).
* :func:`to_jsonable` turns numpy scalars/arrays, tuples, paths and objects with
  ``to_dict()`` into plain JSON values. Non-finite floats are refused by default
  (``nonfinite="error"``: a ``nan`` would otherwise become indistinguishable from
  the string ``"nan"``); ``nonfinite="string"`` writes them as ``"nan"``/``"inf"``
  for human-read result files.
* :func:`dumps` is the canonical JSON text (sorted keys, UTF-8 kept).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from dpkit.validate import ParameterError

TEMP_PREFIX = ".tmp-"
NONFINITE = ("error", "string")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is fsynced and renamed onto ``path``.

    For writers that need a file name (``np.savez``...). On an exception the
    temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike, *, replace: bool = False) -> Iterator[Path]:
    """Yield a staging folder beside ``path``; on success its files are fsynced and it is renamed to ``path``.

    ``replace=False`` refuses an existing ``path`` (ParameterError); ``replace=True``
    removes it just before the rename. On an exception the staging folder is removed.
    """
    path = Path(path)
    if path.exists() and not replace:
        raise ParameterError("path", str(path), "already exists; it is written once")
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=path.parent))
    try:
        yield staging
        for file in staging.rglob("*"):
            if file.is_file():
                with open(file, "rb") as handle:
                    os.fsync(handle.fileno())
        if path.exists():
            shutil.rmtree(path)
        os.replace(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename); returns the path."""
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically; returns the path."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete ``.tmp-*`` files left in ``folder`` (not recursive) by an interrupted write."""
    removed = []
    for tmp in Path(folder).glob(TEMP_PREFIX + "*"):
        if tmp.is_file():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
    return removed


def to_jsonable(value: Any, *, nonfinite: str = "error",
                hook: Callable[[Any], Any] | None = None, strict: bool = True) -> Any:
    """A JSON-ready copy of ``value`` (dicts, lists, strings, numbers, booleans, None).

    ``hook(value)`` may return a replacement for values it handles, or ``None``
    to let the default rules apply (used by :mod:`dpkit.runs` to tag marks).
    ``strict=False`` returns other objects unchanged instead of raising (for
    display, e.g. an audit's outcomes).
    """
    if nonfinite not in NONFINITE:
        raise ParameterError("nonfinite", nonfinite, f"must be one of {list(NONFINITE)}")

    def convert(v: Any) -> Any:
        if hook is not None:
            replaced = hook(v)
            if replaced is not None:
                return replaced
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, str):
            return str(v)
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            if not math.isfinite(v):
                if nonfinite == "string":
                    return str(v)
                raise ParameterError("value", v, "must be a finite number to be written as JSON")
            return float(v)
        if isinstance(v, Mapping):
            return {str(k): convert(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [convert(x) for x in v]
        if isinstance(v, os.PathLike):
            return os.fspath(v)
        module = type(v).__module__ or ""
        if module.startswith("numpy"):
            if hasattr(v, "tolist"):
                return convert(v.tolist())
        if hasattr(v, "to_dict"):
            return convert(v.to_dict())
        if not strict:
            return v
        raise ParameterError("value", type(v).__name__,
                             "must be JSON-serializable (dicts, lists, strings, numbers, arrays)")

    return convert(value)


def dumps(value: Any, *, indent: int | None = None, nonfinite: str = "error",
          hook: Callable[[Any], Any] | None = None) -> str:
    """Canonical JSON of :func:`to_jsonable` (sorted keys, non-ASCII kept)."""
    return json.dumps(to_jsonable(value, nonfinite=nonfinite, hook=hook), ensure_ascii=False,
                      sort_keys=True, indent=indent, allow_nan=False)
