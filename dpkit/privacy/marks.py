"""Marks on text: :class:`Public` (never private) and :class:`Privatized` (a mechanism's output).

The guard of the API backends (:mod:`dpkit.backends.guard`) sends only marked
text. This module decides who may make a mark:

* :class:`Public` -- text that was never private (instructions, label names,
  public corpora). Writing ``Public("...")`` is an explicit statement by the
  author of the code; no dpkit helper marks a caller's ``str`` on its behalf.
* :class:`Privatized` -- text released by a differentially private mechanism.
  It is made only by :func:`release_text` from the **ledger entry** that
  charged the release (``PrivacyLedger.spend`` / ``spend_parallel`` return it),
  so its provenance always names the mechanism, its contract and the charge.
  The mechanisms of dpkit (DP-KPS vocabulary and keyphrase sequences, DP-ST
  triples) call it; their callers receive marked values.

Guarantees:

* Every mark is sealed: an HMAC, under a key drawn from OS entropy when this
  module is imported, over the kind, the text and the provenance.
  :func:`is_sealed` (used by the guard) accepts only instances of exactly
  :class:`Public` / :class:`Privatized` whose seal matches, so ``str.__new__``,
  subclasses, edited provenance and forged pickles are refused. A mark does
  not survive leaving the process (unpickling in another process raises
  :class:`PrivateTextError`); run folders re-issue marks from their own files.
* ``Privatized`` provenance is never empty, and each entry holds a source, a
  contract and a ledger entry whose contract is the same
  (:func:`check_provenance`).
* Marks do not survive string operations: ``Public("a") + "b"``, f-strings,
  ``.format``, slicing, ``.upper()``, ... return plain ``str``. Marked pieces
  are combined only by :func:`compose_prompt` or :meth:`Public.join_marked`,
  which accept marked pieces only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from dpkit.privacy.ledger import Charge
from dpkit.validate import ParameterError

_KEY = os.urandom(32)
_CONTRACT_KEYS = ("mechanism", "measure", "neighbouring", "unit")
_ENTRY_KEYS = ("label", "composition", "count", "groups")


class PrivateTextError(TypeError):
    """Text without a valid Public/Privatized mark was about to leave the process."""


def _seal(kind: str, text: str, provenance: tuple[str, ...]) -> bytes:
    message = "\x00".join((kind, text, *provenance)).encode("utf-8", "surrogatepass")
    return hmac.new(_KEY, message, hashlib.sha256).digest()


class _Marked(str):
    """Base of the two marks; concatenation and methods return plain ``str``."""

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} text is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} text is immutable")

    def __add__(self, other):  # explicit: the result is unmarked
        return str.__add__(str(self), other)

    def __radd__(self, other):
        return str.__add__(str(other), str(self))

    def __mod__(self, other):
        return str.__mod__(str(self), other)

    def __mul__(self, n):
        return str.__mul__(str(self), n)

    __rmul__ = __mul__

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class Public(_Marked):
    """Text declared public by the code that builds it (never derived from private data)."""

    def __new__(cls, text: str):
        if cls is not Public:
            raise PrivateTextError("Public cannot be subclassed")
        if not isinstance(text, str):
            raise ParameterError("text", type(text).__name__, "Public(...) wraps a string")
        if isinstance(text, Privatized):
            raise ParameterError("text", "<Privatized>", "is already Privatized; do not re-mark privatized text as Public")
        obj = super().__new__(cls, text)
        object.__setattr__(obj, "_mark_seal", _seal("public", str.__str__(obj), ()))
        return obj

    def __repr__(self) -> str:
        return f"Public({str.__repr__(self)})"

    def __reduce__(self):
        return (_rebuild, ("public", str(self), (), self._mark_seal))

    def join_marked(self, parts: Iterable["Public | Privatized"]) -> "Public | Privatized":
        """``sep.join(parts)`` keeping the marks: Privatized if any part is, else Public."""
        parts = list(parts)
        _check_marked_fields({f"parts[{i}]": p for i, p in enumerate(parts)})
        text = str.join(str(self), [str(p) for p in parts])
        return _combine(text, parts)


class Privatized(_Marked):
    """Text released by a DP mechanism, with its provenance (see :func:`release_text`).

    Not constructed directly: ``Privatized(...)`` raises. The mechanisms call
    :func:`release_text` with the ledger entry of the release.
    """

    def __new__(cls, *args, **kwargs):
        raise PrivateTextError(
            "Privatized text is made only by a DP mechanism: call "
            "dpkit.privacy.marks.release_text(text, ledger_entry) with the entry that "
            "PrivacyLedger.spend(...) returned for the release")

    @property
    def provenance(self) -> list[dict]:
        """One dict per contributing release: ``source``, ``contract``, ``ledger_entry``, ``note``."""
        return [json.loads(p) for p in self._provenance]

    def __repr__(self) -> str:
        names = ", ".join(p.get("source") or "?" for p in self.provenance)
        return f"Privatized({str.__repr__(self)}, source={names!r})"

    def __reduce__(self):
        return (_rebuild, ("privatized", str(self), self._provenance, self._mark_seal))


def _issue_privatized(text: str, provenance: tuple[str, ...]) -> Privatized:
    if not provenance:
        raise PrivateTextError("Privatized text needs a non-empty provenance")
    obj = str.__new__(Privatized, text)
    object.__setattr__(obj, "_provenance", provenance)
    object.__setattr__(obj, "_mark_seal", _seal("privatized", str.__str__(obj), provenance))
    return obj


def _rebuild(kind: str, text: str, provenance: tuple[str, ...], seal: bytes):
    """Unpickle a mark: only one sealed in this process is accepted."""
    if not isinstance(seal, bytes) or not hmac.compare_digest(seal, _seal(kind, text, tuple(provenance))):
        raise PrivateTextError("a pickled Public/Privatized mark was made in another process or edited; "
                               "marks do not travel between processes")
    if kind == "public":
        return Public(text)
    for p in provenance:
        check_provenance(json.loads(p))
    return _issue_privatized(text, tuple(provenance))


def check_provenance(entry: Any) -> dict:
    """Raise :class:`PrivateTextError` unless ``entry`` is a complete provenance record."""
    if not isinstance(entry, Mapping):
        raise PrivateTextError("a provenance entry must be a dict with source, contract and ledger_entry")
    source, contract, charge = entry.get("source"), entry.get("contract"), entry.get("ledger_entry")
    if not isinstance(source, str) or not source:
        raise PrivateTextError("a provenance entry must name its source mechanism")
    if not isinstance(contract, Mapping) or any(not contract.get(k) for k in _CONTRACT_KEYS):
        raise PrivateTextError(f"provenance of {source!r} lacks a privacy contract "
                               f"(needs {', '.join(_CONTRACT_KEYS)})")
    if not isinstance(charge, Mapping) or any(k not in charge for k in _ENTRY_KEYS):
        raise PrivateTextError(f"provenance of {source!r} lacks the ledger entry that charged the release")
    if charge.get("contract") != contract:
        raise PrivateTextError(f"provenance of {source!r}: the ledger entry charged another contract")
    return dict(entry)


def _canonical(entry: Mapping) -> str:
    return json.dumps(entry, sort_keys=True, ensure_ascii=False, allow_nan=False, default=str)


def provenance_of(ledger_entry: Mapping[str, Any], source: str | None = None, note: str = "") -> str:
    """The canonical provenance record of a release charged by ``ledger_entry`` (a Charge, or its saved dict)."""
    if isinstance(ledger_entry, Charge):
        ledger_entry = ledger_entry.to_dict()
    if not isinstance(ledger_entry, Mapping) or not isinstance(ledger_entry.get("contract"), Mapping):
        raise ParameterError("ledger_entry", type(ledger_entry).__name__,
                             "must be the entry PrivacyLedger.spend(...)/spend_parallel(...) returned")
    entry = json.loads(_canonical(dict(ledger_entry)))
    contract = entry["contract"]
    source = source or str(contract.get("mechanism") or "")
    if not isinstance(source, str):
        raise ParameterError("source", source, "must be a string naming the mechanism")
    record = {"source": source, "contract": contract, "ledger_entry": entry, "note": str(note)}
    check_provenance(record)
    return _canonical(record)


def _provenances(ledger_entry: Any, source: str | None, note: str) -> tuple[str, ...]:
    single = isinstance(ledger_entry, (Mapping, Charge))
    entries = [ledger_entry] if single else list(ledger_entry or ())
    if not entries:
        raise ParameterError("ledger_entry", ledger_entry, "must name at least one ledger entry")
    return _dedupe(provenance_of(e, source, note) for e in entries)


def release_text(text: str, ledger_entry: Any, *, source: str | None = None,
                 note: str = "") -> Privatized:
    """Mark ``text`` as the output of the release that ``ledger_entry`` charged.

    For mechanisms: ``text`` must be the mechanism's output (or post-processing
    of it alone). ``ledger_entry`` is what ``PrivacyLedger.spend``/``spend_parallel``
    returned, or a sequence of them when several releases contributed;
    ``source`` names the step (default: the contract's mechanism).
    """
    return release_texts([text], ledger_entry, source=source, note=note)[0]


def release_texts(texts: Sequence[str], ledger_entry: Any, *, source: str | None = None,
                  note: str = "") -> list[Privatized]:
    """:func:`release_text` for many outputs of one release (the provenance is built once)."""
    if isinstance(texts, str):
        raise ParameterError("texts", "<str>", "must be a sequence of released strings")
    provenance = _provenances(ledger_entry, source, note)
    out = []
    for i, text in enumerate(texts):
        if not isinstance(text, str) or isinstance(text, _Marked):
            raise ParameterError(f"texts[{i}]", type(text).__name__, "must be a plain released string")
        out.append(_issue_privatized(str(text), provenance))
    return out


def _is_dpkit_function(function: Any) -> bool:
    """A module-level function of a dpkit module: no closure or lambda that could carry other text."""
    module = getattr(function, "__module__", "") or ""
    qualname = getattr(function, "__qualname__", "") or ""
    return (callable(function) and (module == "dpkit" or module.startswith("dpkit."))
            and "<" not in qualname and getattr(function, "__closure__", None) is None)


def post_process(value: "Privatized", function: Callable[..., str], **settings: int | float | bool) -> "Privatized":
    """``function(value, **settings)`` keeping the provenance: a public function of the released text alone.

    ``function`` must be a module-level function defined in dpkit (quoting,
    truncating...): a caller's lambda or closure could return any text -- a
    private one included -- and get it marked, so it is refused
    (:class:`PrivateTextError`). ``settings`` are public numbers (e.g. a
    length cap); text is refused there. Only mechanisms mark text.
    """
    if not is_sealed(value) or not isinstance(value, Privatized):
        raise PrivateTextError("post_process takes a sealed Privatized value")
    if not _is_dpkit_function(function):
        raise PrivateTextError("post_process takes a module-level dpkit function of the released text alone; "
                               "a lambda or a caller's function could mark any text")
    for name, setting in settings.items():
        if isinstance(setting, str) or not isinstance(setting, (int, float, bool)):
            raise ParameterError(name, type(setting).__name__, "must be a public number (no text)")
    out = function(str(value), **settings)
    if not isinstance(out, str):
        raise ParameterError("function", function, "must return a string")
    return _issue_privatized(str(out), value._provenance)


def _completion(prompt: "Privatized", text: str) -> "Privatized":
    """The model's completion of a sealed Privatized ``prompt``, for dpkit's generation loop only.

    Post-processing: the completion is a function of the prompt, the public model
    and a public sampling seed, so it keeps the prompt's provenance. Only
    :func:`dpkit.runs.generate_records` calls it, with the text the backend
    returned for exactly this prompt; it is not a public API.
    """
    if not is_sealed(prompt) or not isinstance(prompt, Privatized):
        raise PrivateTextError("a completion is marked only for a sealed Privatized prompt")
    if not isinstance(text, str) or isinstance(text, _Marked):
        raise ParameterError("text", type(text).__name__, "must be the plain text the backend returned")
    return _issue_privatized(str(text), prompt._provenance)


def is_sealed(value: Any) -> bool:
    """True for an instance of exactly Public or Privatized whose seal and provenance are intact."""
    kind = {Public: "public", Privatized: "privatized"}.get(type(value))
    if kind is None:
        return False
    seal = getattr(value, "_mark_seal", None)
    provenance = getattr(value, "_provenance", ()) if kind == "privatized" else ()
    if not isinstance(seal, bytes) or not isinstance(provenance, tuple):
        return False
    if kind == "privatized" and not provenance:
        return False
    return hmac.compare_digest(seal, _seal(kind, str.__str__(value), provenance))


def _check_marked_fields(fields: Mapping[str, Any]) -> None:
    for name, value in fields.items():
        if not is_sealed(value):
            raise PrivateTextError(
                f"field {name!r} is a {type(value).__name__}, not sealed Public or Privatized text; "
                f"wrap text that was never private as Public(...); private text must first go through "
                f"a dpkit DP mechanism (which returns Privatized text)")


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _combine(text: str, parts: Iterable[Any]) -> "Public | Privatized":
    private = [p for p in parts if isinstance(p, Privatized)]
    if not private:
        return Public(text)
    return _issue_privatized(text, _dedupe(s for p in private for s in p._provenance))


def compose_prompt(template: Public, **fields: "Public | Privatized") -> "Public | Privatized":
    """Fill ``template`` (``str.format`` fields) with marked pieces, keeping the marks.

    The template must be :class:`Public`; every field must be :class:`Public` or
    :class:`Privatized` (numbers and plain strings are refused: wrap public ones,
    so the decision that they are safe is written in the code). The result is
    :class:`Privatized`, carrying every contributing provenance, when any field is
    Privatized, and :class:`Public` otherwise.
    """
    if not is_sealed(template) or not isinstance(template, Public):
        raise PrivateTextError(
            f"template must be Public text, got {type(template).__name__}: "
            f"write it as compose_prompt(Public('...{{field}}...'), field=...)")
    _check_marked_fields(fields)
    try:
        text = str(template).format(**{k: str(v) for k, v in fields.items()})
    except (KeyError, IndexError) as exc:
        raise ParameterError("template", str(template), f"names a field that was not given: {exc}") from None
    return _combine(text, fields.values())


def require_marked(name: str, value: Any, kinds: Sequence[type] = ()) -> Any:
    """For helpers that build prompts: raise ParameterError unless ``value`` is a sealed mark.

    ``kinds`` restricts the accepted marks (e.g. ``(Public,)``); empty accepts both.
    """
    allowed = tuple(kinds) or (Public, Privatized)
    if not is_sealed(value) or not isinstance(value, allowed):
        names = " or ".join(k.__name__ for k in allowed)
        raise ParameterError(name, f"<{type(value).__name__}>",
                             f"must be {names} text: dpkit never marks a caller's str; write Public('...') "
                             f"for text that was never private, and pass private text through a mechanism")
    return value


Marked = Union[Public, Privatized]

__all__ = ["Marked", "PrivateTextError", "Privatized", "Public", "check_provenance", "compose_prompt",
           "is_sealed", "post_process", "provenance_of", "release_text", "release_texts", "require_marked"]
