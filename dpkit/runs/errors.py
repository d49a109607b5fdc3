"""The errors of a run folder: each names the folder or the file, never a private value.

* :class:`RunMismatchError` and :class:`RunCorruptError` are
  :class:`~dpkit.validate.ParameterError` (the CLI's exit 2): the folder holds
  something else than what was asked for, or something that does not match its
  checksums.
* :class:`RunInUseError`: another process writes the folder (exit 2 too).

:func:`failure_exit_code` and :func:`failure_line` are what a command (``dpkit``'s entry point,
``dpkit synth``) makes of a failure: its exit code and its one line on stderr.
"""

from __future__ import annotations

from dpkit.validate import ParameterError


class RunMismatchError(ParameterError):
    """An existing run folder was opened with different parameters, seed or input."""


class RunCorruptError(ParameterError):
    """A run folder's files do not match their checksums or are unreadable."""


class RunInUseError(RuntimeError):
    """Another process holds the run folder's lock."""


def failure_exit_code(error: BaseException) -> int | None:
    """2 for bad input or a folder that cannot be used as asked, 1 for the environment, None otherwise."""
    if isinstance(error, (ParameterError, RunInUseError)):
        return 2
    if isinstance(error, (OSError, MemoryError)):
        return 1
    return None


def failure_line(error: BaseException, out: str | None) -> str:
    """One line naming the folder (and the file) and what to do; no private values."""
    where = f" (run folder {out})" if out else ""
    if isinstance(error, (ParameterError, RunInUseError)):
        return f"{error}{where}"
    if isinstance(error, MemoryError):
        return (f"the environment failed{where}: out of memory ({error or 'MemoryError'}). What was written is "
                "kept; lower the sizes (--set), free memory, or use a larger machine and rerun")
    reason = getattr(error, "strerror", None) or type(error).__name__
    path = f": {error.filename}" if getattr(error, "filename", None) else ""
    return (f"the environment failed{where}: {reason}{path}. What was written is kept; fix the disk or "
            "permissions and rerun the same command to resume (no budget is spent twice)")
