"""The errors of a run folder: each names the folder or the file, never a private value.

* :class:`RunMismatchError` and :class:`RunCorruptError` are
  :class:`~dpkit.validate.ParameterError` (the CLI's exit 2): the folder holds
  something else than what was asked for, or something that does not match its
  checksums.
* :class:`RunInUseError`: another process writes the folder (exit 2 too).
"""

from __future__ import annotations

from dpkit.validate import ParameterError


class RunMismatchError(ParameterError):
    """An existing run folder was opened with different parameters, seed or input."""


class RunCorruptError(ParameterError):
    """A run folder's files do not match their checksums or are unreadable."""


class RunInUseError(RuntimeError):
    """Another process holds the run folder's lock."""
