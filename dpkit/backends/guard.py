"""The privatized-text guard: only sealed Public/Privatized text may be sent to a remote model.

The marks themselves live in :mod:`dpkit.privacy.marks` (a privacy concept:
only mechanisms make :class:`~dpkit.privacy.marks.Privatized` text).

Guarantees:

* A plain ``str`` is never *sendable*: :func:`require_sendable` raises
  :class:`PrivateTextError` for it, for a subclass, for a mark whose seal does
  not match, and for Privatized text whose provenance lacks a mechanism,
  contract or ledger entry. Every remote backend calls it on every prompt,
  system text and chat message before anything is sent or cached.
* Every admitted prompt is counted by :meth:`dpkit.backends.base.Backend.describe`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

from dpkit.privacy.marks import (PrivateTextError, Privatized, Public, check_provenance, is_sealed)
from dpkit.validate import ParameterError

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
        if is_sealed(content) and isinstance(content, Privatized):
            for entry in content.provenance:
                check_provenance(entry)
                if entry not in provenance:
                    provenance.append(entry)
        elif not (is_sealed(content) and isinstance(content, Public)):
            raise PrivateTextError(
                f"backend {backend!r} sends text off this machine and accepts only Public or "
                f"Privatized text, but message {i} ({m['role']}) is a {type(content).__name__} without a valid mark "
                f"of {len(str(content))} characters (not shown: it may be private). Release it through a dpkit DP mechanism (which returns "
                f"Privatized text), build prompts with compose_prompt(Public(template), ...), or wrap "
                f"text that was never private as Public(...).")
    return provenance


def plain(messages: Sequence[Message]) -> list[dict]:
    """Messages with the marks dropped (plain ``str`` contents), e.g. for a cache key or a client."""
    return [{"role": m["role"], "content": str(m["content"])} for m in messages]
