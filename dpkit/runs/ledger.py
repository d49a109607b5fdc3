"""The run's privacy ledger on disk: written before the work it pays for, never shrinking, never doubled.

A :class:`~dpkit.runs.Run` hooks its ledger (``PrivacyLedger.on_record``): each
entry is written to the manifest, atomically and fsynced, before ``spend``
returns -- so before the mechanism reads the private data it pays for. A crash
at any point leaves a ledger that shows at least what was spent.

On resume the pipeline runs again and records its entries again, in the same
order (its configuration is checked equal). :func:`merged` keeps one copy: an
entry already on disk at the same position is the same charge, not a new one.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dpkit.privacy.ledger import Charge, PrivacyLedger
from dpkit.validate import ParameterError


def merged(stored: Mapping[str, Any] | None, current: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ledger to write: ``current`` or ``stored``, whichever holds the other as a prefix.

    When they diverge (a resume that charged something else), the stored
    entries are kept and ``current``'s other entries are added after them: the
    total can only be over-stated, never under-stated. Entries are compared as
    :class:`~dpkit.privacy.Charge` objects (label, contract and composition).
    """
    old = [Charge.from_dict(e) for e in (stored or {}).get("entries") or []]
    new = [Charge.from_dict(e) for e in current.get("entries") or []]
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    if common == len(old):
        return current
    if common == len(new):
        return stored
    combined = PrivacyLedger(delta=current.get("delta"))
    combined.replay(old + new[common:])
    return combined.to_dict()


def replay(ledger: Any, entries: Sequence[Mapping[str, Any]], name: str) -> None:
    """Re-enter the saved ``entries`` of checkpoint ``name`` in ``ledger`` (no-op without a ledger)."""
    if not entries or ledger is None:
        return
    if not hasattr(ledger, "replay"):
        raise ParameterError("ledger", ledger, f"cannot re-enter the saved spend of seeds {name!r}: "
                             "it needs replay() (use a PrivacyLedger)")
    ledger.replay(entries)
