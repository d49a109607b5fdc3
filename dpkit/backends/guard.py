"""The privatized-text guard: only text marked safe may be sent to a remote model.

Two ``str`` subclasses mark text:

* :class:`Public` -- text that was never private (instructions, label names,
  public corpora). Marking is an explicit statement by the author of the code.
* :class:`Privatized` -- text released by a differentially private mechanism of
  :mod:`dpkit`. It carries its *provenance* (the mechanism, its
  :class:`~dpkit.privacy.PrivacyContract` as a dict, a note), so a run manifest
  can say exactly what reached an API.

Guarantees:

* A plain ``str`` is never *sendable*: :func:`require_sendable` raises
  :class:`PrivateTextError` for it, and every remote backend calls it on every
  prompt, system text and chat message before anything is sent or cached.
* Marks do not survive ordinary string operations: ``Public("a") + "b"``,
  f-strings, ``.format``, slicing, ``.upper()``... all return a plain ``str``
  (the methods are those of ``str``), so mixing in unmarked text loses the mark
  and the result is refused. The only way to combine marked pieces is
  :func:`compose_prompt` (or :meth:`Public.join_marked`), which accepts marked
  pieces only.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence, Union

from dpkit.validate import ParameterError


class PrivateTextError(TypeError):
    """Text without a Public/Privatized mark was about to leave the process."""


class _Marked(str):
    """Base of the two marks; concatenation and methods return plain ``str``."""

    __slots__ = ()

    def __add__(self, other):  # explicit: the result is unmarked
        return str.__add__(str(self), other)

    def __radd__(self, other):
        return str.__add__(str(other), str(self))

    def __mod__(self, other):
        return str.__mod__(str(self), other)

    def __mul__(self, n):
        return str.__mul__(str(self), n)

    __rmul__ = __mul__

    def __getnewargs__(self):  # pragma: no cover - pickling support
        return (str(self),)


class Public(_Marked):
    """Text declared public by the code that builds it (never derived from private data)."""

    __slots__ = ()

    def __new__(cls, text: str):
        if not isinstance(text, str):
            raise ParameterError("text", text, "Public(...) wraps a string")
        if isinstance(text, Privatized):
            raise ParameterError("text", text, "is already Privatized; do not re-mark privatized text as Public")
        return super().__new__(cls, text)

    def __repr__(self) -> str:
        return f"Public({str.__repr__(self)})"

    def join_marked(self, parts: Iterable["Public | Privatized"]) -> "Public | Privatized":
        """``sep.join(parts)`` keeping the marks: Privatized if any part is, else Public."""
        parts = list(parts)
        _check_marked_fields({f"parts[{i}]": p for i, p in enumerate(parts)})
        text = str.join(str(self), [str(p) for p in parts])
        return _combine(text, parts)


class Privatized(_Marked):
    """Text released by a DP mechanism, with its provenance.

    ``contract`` is the mechanism's :class:`~dpkit.privacy.PrivacyContract` (or any
    object with ``to_dict()``, or a dict); ``source`` names the mechanism or step
    that produced the text (e.g. ``"dpkps.keyphrase_sampling"``). At least one
    of the two is required. ``sources`` (advanced) lists several provenances when
    pieces were combined by :func:`compose_prompt`.
    """

    def __new__(cls, text: str, contract: Any = None, source: str | None = None, *,
                note: str = "", sources: Sequence[Mapping] | None = None):
        if not isinstance(text, str):
            raise ParameterError("text", text, "Privatized(...) wraps a string")
        if sources is None:
            if contract is None and not source:
                raise ParameterError("contract/source", None,
                                     "Privatized text must say which mechanism produced it: "
                                     "pass contract=<PrivacyContract> and/or source='<mechanism>'")
            sources = [_provenance(contract, source, note)]
        obj = super().__new__(cls, text)
        obj._provenance = tuple(_dedupe([dict(s) for s in sources]))
        return obj

    @property
    def provenance(self) -> list[dict]:
        """One dict per mechanism that contributed: ``source``, ``contract``, ``note``."""
        return [dict(p) for p in self._provenance]

    def __repr__(self) -> str:
        names = ", ".join(p.get("source") or "?" for p in self._provenance)
        return f"Privatized({str.__repr__(self)}, source={names!r})"

    def __reduce__(self):  # pragma: no cover - pickling support
        return (_rebuild_privatized, (str(self), [dict(p) for p in self._provenance]))


def _rebuild_privatized(text: str, sources: list[dict]) -> Privatized:  # pragma: no cover
    return Privatized(text, sources=sources)


def _contract_dict(contract: Any) -> dict | None:
    if contract is None:
        return None
    if isinstance(contract, Mapping):
        return dict(contract)
    if hasattr(contract, "to_dict"):
        return dict(contract.to_dict())
    raise ParameterError("contract", contract, "must be a PrivacyContract (with to_dict()), a dict or None")


def _provenance(contract: Any, source: str | None, note: str) -> dict:
    record = _contract_dict(contract)
    if source is None and record is not None:
        source = str(record.get("mechanism", "")) or None
    if source is not None and not isinstance(source, str):
        raise ParameterError("source", source, "must be a string naming the mechanism")
    return {"source": source, "contract": record, "note": str(note)}


def _dedupe(items: list[dict]) -> list[dict]:
    out: list[dict] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def _check_marked_fields(fields: Mapping[str, Any]) -> None:
    for name, value in fields.items():
        if not isinstance(value, (Public, Privatized)):
            raise PrivateTextError(
                f"field {name!r} is a plain {type(value).__name__}, not Public or Privatized text; "
                f"wrap public text as Public(...) and DP output as Privatized(..., contract=...)")


def _combine(text: str, parts: Iterable[Any]) -> "Public | Privatized":
    private = [p for p in parts if isinstance(p, Privatized)]
    if not private:
        return Public(text)
    return Privatized(text, sources=[s for p in private for s in p._provenance])


def compose_prompt(template: Public, **fields: "Public | Privatized") -> "Public | Privatized":
    """Fill ``template`` (``str.format`` fields) with marked pieces, keeping the marks.

    The template must be :class:`Public`; every field must be :class:`Public` or
    :class:`Privatized` (numbers and plain strings are refused: wrap them, so the
    decision that they are safe is written in the code). The result is
    :class:`Privatized`, carrying every contributing provenance, when any field is
    Privatized, and :class:`Public` otherwise.
    """
    if not isinstance(template, Public):
        raise PrivateTextError(
            f"template must be Public text, got {type(template).__name__}: "
            f"write it as compose_prompt(Public('...{{field}}...'), field=...)")
    _check_marked_fields(fields)
    try:
        text = str(template).format(**{k: str(v) for k, v in fields.items()})
    except (KeyError, IndexError) as exc:
        raise ParameterError("template", str(template), f"names a field that was not given: {exc}") from None
    return _combine(text, fields.values())


Marked = Union[Public, Privatized]
Message = Mapping[str, Any]
PromptLike = Union[str, Sequence[Message]]

ROLES = ("system", "user", "assistant")


def normalize_messages(prompt: PromptLike, system: Any = None) -> list[dict]:
    """A prompt or a chat as a list of ``{"role", "content"}`` dicts (contents kept as given)."""
    if isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, Sequence) and len(prompt) > 0:
        messages = []
        for i, m in enumerate(prompt):
            if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
                raise ParameterError(f"prompt[{i}]", m, "a chat message is a dict with 'role' and 'content'")
            if m["role"] not in ROLES:
                raise ParameterError(f"prompt[{i}]['role']", m["role"], f"must be one of {list(ROLES)}")
            if not isinstance(m["content"], str):
                raise ParameterError(f"prompt[{i}]['content']", m["content"], "must be a string")
            messages.append({"role": m["role"], "content": m["content"]})
    else:
        raise ParameterError("prompt", prompt, "must be a string or a non-empty list of chat messages")
    if system is not None:
        if not isinstance(system, str):
            raise ParameterError("system", system, "must be a string or None")
        messages = [{"role": "system", "content": system}] + messages
    return messages


def require_sendable(messages: Sequence[Message], backend: str) -> list[dict]:
    """Raise :class:`PrivateTextError` unless every message content is Public or Privatized.

    Returns the provenance of the privatized contents (for the manifest).
    """
    provenance: list[dict] = []
    for i, m in enumerate(messages):
        content = m["content"]
        if isinstance(content, Privatized):
            provenance.extend(content.provenance)
        elif not isinstance(content, Public):
            raise PrivateTextError(
                f"backend {backend!r} sends text off this machine and accepts only Public or "
                f"Privatized text, but message {i} ({m['role']}) is a plain {type(content).__name__} "
                f"of {len(str(content))} characters (not shown: it may be private). Release it through a dpkit DP mechanism (which returns "
                f"Privatized text), build prompts with compose_prompt(Public(template), ...), or wrap "
                f"text that was never private as Public(...).")
    return _dedupe(provenance)


def plain(messages: Sequence[Message]) -> list[dict]:
    """Messages with the marks dropped (plain ``str`` contents), e.g. for a cache key or a client."""
    return [{"role": m["role"], "content": str(m["content"])} for m in messages]
