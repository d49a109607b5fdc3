"""LLM reconstruction: weave the privatized triples into a text (post-processing).

The prompt has the shape of Table 3 of {cite}`meisenbacher2025dpst`: a system
instruction, three worked examples (user: ``Input triples: [...]``, assistant:
``Output text: ...``), then the document's private triples. The wording and the
examples here are ours. The only document-dependent content of the prompt is
the list of *privatized* triples (the :class:`~dpkit.privacy.marks.Privatized`
texts that :class:`~dpkit.dpst.privatize.DPST` issued, with its contract and
ledger entry; a document cannot be built or extended by hand), so any backend -- the local model by default, or
an API model by name -- may receive it; reconstruction is post-processing and
costs no privacy.

The token budget ``max_new_tokens`` is a fixed parameter: the output's length
never depends on the input document's length.

``document_type`` (public text, e.g. "health news tweet") names what the text
should be in the instruction; ``label`` (optional, a :class:`~dpkit.privacy.marks.Public`
name from the public label set: the record's label AFTER randomized response, so
post-processing of a released value) is given as the text's topic in the last user
turn (``Topic: <label>.``), and the instruction then asks for a text on that topic.
With it the label set is used as public information, and the text's topic comes from
the label's name (what the model knows of it), not from the private text; the model's turn is opened with ``Output text:``
(as in the worked examples), ended at the first new line, and may not open as
an assistant (:func:`reconstruction_voice`, :mod:`dpkit.models.voice`).
"""

from __future__ import annotations

import re
from typing import Sequence

from dpkit.backends import get_backend
from dpkit.dpst.privatize import PrivateDocument
from dpkit.models.voice import BANNED_OPENINGS, Voice
from dpkit.privacy.marks import Privatized, Public, compose_prompt, post_process, require_marked
from dpkit.validate import ParameterError, check_int

INSTRUCTION = Public(
    "Write a short text from the given triples. Use only the information the triples give, "
    "filling small gaps where it reads naturally, and skip triples that do not fit the rest. "
    "The text must be grammatical, natural and logical, and brief. Reply with the text only, "
    "without any explanation.")


TOPIC_SENTENCE = " When a topic is given, the text must be about that topic; use the triples that fit it."


def instruction(document_type: str | None = None, topic: bool = False) -> Public:
    """The system instruction; with a ``document_type`` it asks for a text of that type; with ``topic`` it
    says that the text must be on the topic the user turn names (the released label, see the module)."""
    text = str(INSTRUCTION)
    if document_type is not None:
        if not isinstance(document_type, str) or not document_type.strip():
            raise ParameterError("document_type", document_type, "must be a non-empty description or None")
        doc = " ".join(document_type.split())
        text = text.replace("Write a short text from the given triples.", f"Write one {doc} from the given triples.")
    if topic:
        text = text.replace(" Reply with the text only", TOPIC_SENTENCE + " Reply with the text only")
    return INSTRUCTION if text == str(INSTRUCTION) else Public(text)

EXAMPLES: tuple[tuple[Public, Public], ...] = (
    (Public("Input triples: ['Maria opened a bakery']"),
     Public("Output text: Maria opened a bakery.")),
    (Public("Input triples: ['the storm damaged roofs', 'the city closed schools', "
            "'residents cleared the streets']"),
     Public("Output text: The storm damaged roofs, so the city closed its schools while residents "
            "cleared the streets.")),
    (Public("Input triples: ['the team won the final', 'fans celebrated in the square', "
            "'the coach praised the players']"),
     Public("Output text: The team won the final. Fans celebrated in the square, and the coach "
            "praised the players.")),
)

USER_TEMPLATE = Public("Input triples: {triples}")
TOPIC_TEMPLATE = Public("Topic: {topic}. Input triples: {triples}")
ANSWER_PREFIX = "Output text:"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "’") + "'"


def format_triples(triples: Sequence[Privatized]) -> Privatized:
    """``['t1', 't2']`` -- the list shape the examples use; the triples must be Privatized (DP-ST's output)."""
    if isinstance(triples, str) or not isinstance(triples, Sequence) or len(triples) == 0:
        raise ParameterError("triples", type(triples).__name__, "must be a non-empty sequence of Privatized triples")
    quoted = [post_process(require_marked(f"triples[{i}]", t, (Privatized,)), _quote) for i, t in enumerate(triples)]
    return compose_prompt(Public("[{items}]"), items=Public(", ").join_marked(quoted))


def reconstruction_voice(document_type: str | None = None) -> Voice:
    """The public decoding rules of a reconstruction: the answer opens with ``Output text:``, ends at
    the first new line, and may not start with an assistant phrase."""
    return Voice(document_type or "short text", system="", prefill=ANSWER_PREFIX, stop=("\n",),
                 banned=BANNED_OPENINGS)


def reconstruction_messages(doc: PrivateDocument, document_type: str | None = None,
                            label: Public | None = None) -> list[dict]:
    """The chat sent to the backend; every content is Public or Privatized. ``label``: a Public label
    name (the released label, after randomized response) named as the topic; None: no topic."""
    if not isinstance(doc, PrivateDocument):
        raise ParameterError("doc", doc, "must be a PrivateDocument from DPST.privatize")
    if doc.raw_text is not None:
        raise ParameterError("doc", "<raw text>", "holds raw text (broken variant); it must not reach a model")
    triples = format_triples(doc.triples)
    if label is not None:
        label = require_marked("label", label, (Public,))
        if not str(label).strip():
            raise ParameterError("label", label, "must be a non-empty public label name or None")
    messages = [{"role": "system", "content": instruction(document_type, topic=label is not None)}]
    for user, assistant in EXAMPLES:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    if label is None:
        messages.append({"role": "user", "content": compose_prompt(USER_TEMPLATE, triples=triples)})
    else:
        messages.append({"role": "user", "content": compose_prompt(TOPIC_TEMPLATE, topic=label, triples=triples)})
    return messages


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


#: The worked examples' answers, normalized: a sentence of the rewrite found inside one of them is an echo.
EXAMPLE_ANSWERS = tuple(_plain(str(answer)[len(ANSWER_PREFIX):]) for _, answer in EXAMPLES)


def clean_output(text: str, fallback: str | None = None) -> str:
    """The rewrite without its answer prefix, without sentences copied from the worked examples
    (3+ words found inside an example's answer: "The coach praised the players.") and without a
    sentence repeated verbatim. A public rule on the model's output (post-processing). A text
    made only of such sentences becomes ``fallback`` (:mod:`dpkit.methods.dpst` gives the
    document's released triples joined as text), or stays as it is when ``fallback`` is None."""
    text = text.strip()
    if text.startswith(ANSWER_PREFIX):
        text = text[len(ANSWER_PREFIX):].strip()
    kept, seen = [], set()
    for sentence in _SENTENCE_BREAK.split(text):
        plain = _plain(sentence)
        if not plain or plain in seen or (len(plain.split()) >= 3 and any(plain in a for a in EXAMPLE_ANSWERS)):
            continue
        seen.add(plain)
        kept.append(sentence)
    if kept:
        return " ".join(kept)
    return text if fallback is None else fallback


def reconstruct(docs: Sequence[PrivateDocument], backend=None, *, max_new_tokens: int = 48,
                temperature: float = 0.0, seed: int = 0, document_type: str | None = None,
                voice: bool = True) -> list[str]:
    """One text per private document. ``backend``: a Backend, a name ("local", "openai",
    "anthropic") or None (``DPKIT_BACKEND``, default local). ``document_type``: see the module
    docstring; ``voice=False`` sends the chat without :func:`reconstruction_voice` (the former way).

    A document of the deliberately broken ``raw_text_fallback`` variant is
    returned as its raw text (that is the leak being demonstrated); everything
    else goes through the model.
    """
    if isinstance(docs, PrivateDocument) or isinstance(docs, str) or not isinstance(docs, Sequence):
        raise ParameterError("docs", type(docs).__name__, "must be a sequence of PrivateDocument (wrap one in a list)")
    docs = list(docs)
    for i, doc in enumerate(docs):
        if not isinstance(doc, PrivateDocument):
            raise ParameterError(f"docs[{i}]", type(doc).__name__, "must be a PrivateDocument from DPST.privatize")
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
    if backend is None or isinstance(backend, str):
        backend = get_backend(backend)
    out: list[str | None] = [d.raw_text for d in docs]
    todo = [i for i, d in enumerate(docs) if d.raw_text is None]
    if todo:
        texts = backend.generate_batch([reconstruction_messages(docs[i], document_type) for i in todo],
                                       max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                                       voice=reconstruction_voice(document_type) if voice else None)
        for i, t in zip(todo, texts):
            out[i] = clean_output(t)
    return [str(t) for t in out]
