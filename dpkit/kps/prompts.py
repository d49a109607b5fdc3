"""Prompts for DP-KPS: a generic instruction naming only the document type and the keyphrases.

The instruction template and the document type are :class:`~dpkit.backends.Public`
(written by the analyst, never derived from private data); the keyphrases are
:class:`~dpkit.backends.Privatized` (released by the DP-KPS mechanisms, with their
contract as provenance).  :func:`~dpkit.backends.compose_prompt` joins them, so a
DP-KPS prompt is privatized by construction and a remote backend accepts it.
The class is never named in a DP-KPS prompt.

Few-shot examples are supplied by the *client* (the party that will use the
synthetic data, e.g. a few of its own records): they are public **by assumption**
-- the caller asserts it by passing them, and they are wrapped as Public here.
Never pass documents from the private corpus as examples.

:func:`class_prompt` builds the "only LLM" baseline prompt, which names the class
and contains no private information.
"""

from __future__ import annotations

from typing import Sequence

from dpkit.backends import Privatized, Public, compose_prompt
from dpkit.validate import ParameterError

DEFAULT_TEMPLATE = Public(
    "Write one {document_type} that uses all of these terms: {keyphrases}. "
    "Reply with the {document_type} only.")
FEW_SHOT_TEMPLATE = Public(
    "Here are examples of the kind of text wanted:\n{examples}\n\n"
    "Write one new {document_type} that uses all of these terms: {keyphrases}. "
    "Reply with the {document_type} only.")
CLASS_TEMPLATE = Public("Write one {document_type} about {class_name}. Reply with the {document_type} only.")


def keyphrase_text(terms: Sequence[str], contract, source: str = "dpkit.kps.sequences") -> Privatized:
    """The comma-separated keyphrases, marked Privatized with the releasing mechanism's contract."""
    if isinstance(terms, str) or not all(isinstance(t, str) for t in terms):
        raise ParameterError("terms", terms, "must be a sequence of keyphrase strings")
    if len(terms) == 0:
        raise ParameterError("terms", terms, "must contain at least one keyphrase")
    return Privatized(", ".join(terms), contract=contract, source=source)


def kps_prompt(terms: Sequence[str], document_type: str, contract, *, examples: Sequence[str] | None = None,
               template: Public | None = None) -> Privatized:
    """A privatized DP-KPS prompt; ``examples`` are client-supplied public few-shot texts."""
    if not isinstance(document_type, str) or not document_type.strip():
        raise ParameterError("document_type", document_type, "must be a non-empty string such as 'medical record'")
    fields = dict(document_type=Public(document_type), keyphrases=keyphrase_text(terms, contract))
    if examples:
        if isinstance(examples, str):
            raise ParameterError("examples", examples, "must be a sequence of example texts")
        fields["examples"] = Public("\n".join(f"- {e}" for e in examples))
        return compose_prompt(template or FEW_SHOT_TEMPLATE, **fields)
    return compose_prompt(template or DEFAULT_TEMPLATE, **fields)


def class_prompt(document_type: str, class_name: str) -> Public:
    """The "only LLM" baseline prompt: names the class, uses no private data."""
    for name, value in (("document_type", document_type), ("class_name", class_name)):
        if not isinstance(value, str) or not value.strip():
            raise ParameterError(name, value, "must be a non-empty string")
    return compose_prompt(CLASS_TEMPLATE, document_type=Public(document_type), class_name=Public(class_name))


def generate_texts(backend, prompts: Sequence, *, max_new_tokens: int = 64, temperature: float = 0.7,
                   seed: int = 0) -> list[str]:
    """One completion per prompt through a :mod:`dpkit.backends` backend (post-processing of the prompts)."""
    prompts = list(prompts)
    if not prompts:
        raise ParameterError("prompts", prompts, "must contain at least one prompt")
    return [t.strip() for t in backend.generate_batch(prompts, max_new_tokens=max_new_tokens,
                                                      temperature=temperature, seed=seed)]
