"""Resumable generation runs that prove their contents: records written as they exist, spend on disk first.

A run is a folder::

    manifest.json      parameters and their digest, seed, versions, backend/model, the privacy
                       ledger, the records' count and hash-chain head, checksums of every other file
    records.jsonl      one {"key", "record", "chain"} line per finished item (append-only, hash-chained)
    seeds/<name>.json  each privatized seed set, saved with the ledger entries it cost
    private/           the input digest and the key that seals marks in the run's files
    .lock              held (fcntl) by the one process writing the run

Typical use::

    run = Run("results/kps", params={"epsilon": 4, "n": 100}, seed=0, ledger=ledger,
              input_digest=file_digest("data.csv"))
    phrases = run.privatized_seeds("keyphrases", lambda: sample_keyphrases(..., ledger=ledger))
    generate_records(run, backend, prompts_from(phrases), batch_size=8)   # skips keys already written
    run.finish(backend=backend)

Guarantees:

* **One writer** (:mod:`~dpkit.runs.lock`). A second process raises
  :class:`RunInUseError` naming the holder's pid and host; a crashed holder's
  lock dies with it.
* **Spend on disk before work** (:mod:`~dpkit.runs.ledger`). The run hooks its
  :class:`~dpkit.privacy.PrivacyLedger`: each entry is in the manifest,
  atomically written and fsynced, before ``spend`` returns, so before the
  private read it pays for. A crash at any point leaves a ledger that shows at
  least what was spent; a resume re-enters the same entries without charging
  them twice.
* **Nothing lost, nothing duplicated** (:mod:`~dpkit.runs.records`). Each record
  is one JSON line, flushed and fsynced before :meth:`Run.append` returns; a
  resume generates only the missing keys; a torn last line (an interrupted
  append) is cut off with a warning.
* **No budget spent twice.** :meth:`Run.privatized_seeds` runs the DP
  computation once and writes its output with the ledger entries it added, in
  one atomic, self-checking file, before any model sees it.
* **No mixed runs.** Other ``params``/``seed``/``input_digest`` raise
  :class:`RunMismatchError` naming what differs.
* **Every stored byte is checked** (:mod:`~dpkit.runs.integrity`). Records are
  hash-chained, and every other file (seeds, keys, input digest, ledger, tracked
  release files) has a checksum in the manifest; a changed, missing, truncated
  or extra file raises :class:`RunCorruptError` naming it, in
  :func:`verify_folder` and on every reopening -- never a silent re-spend or a
  corrupted release. The manifest (parameters, ledger, checksums, chain head)
  is sealed with an HMAC under the run's key in ``private/``, so an edit that
  also recomputes the plain digests and the chain is refused too.
* Marks survive the round trip through run files only with a valid seal made
  with the run's own key (:mod:`~dpkit.runs.codec`).

Modules: :mod:`~dpkit.runs.codec` (JSON, sealed marks, digests),
:mod:`~dpkit.runs.lock`, :mod:`~dpkit.runs.ledger` (ledger persistence),
:mod:`~dpkit.runs.records`, :mod:`~dpkit.runs.integrity`,
:mod:`~dpkit.runs.progress_bars`, :mod:`~dpkit.runs.errors`,
:mod:`~dpkit.runs.run` (the :class:`Run`), :mod:`~dpkit.runs.generate` (the one
generation loop), :mod:`~dpkit.runs.layout` (the ``dpkit synth`` folder).
"""

from __future__ import annotations

from dpkit.runs.codec import digest, file_digest, package_versions
from dpkit.runs.errors import RunCorruptError, RunInUseError, RunMismatchError
from dpkit.runs.generate import generate_records, generate_texts
from dpkit.runs.integrity import verify_folder
from dpkit.runs.progress_bars import progress, progress_enabled
from dpkit.runs.run import RUN_FORMAT, Run

__all__ = ["RUN_FORMAT", "Run", "RunCorruptError", "RunInUseError", "RunMismatchError", "digest", "file_digest",
           "generate_records", "generate_texts", "package_versions", "progress", "progress_enabled",
           "verify_folder"]
