"""Prompts for DP-KPS: a generic instruction naming only the document type and the keyphrases.

No helper here marks a caller's text. The keyphrases must be the
:class:`~dpkit.privacy.marks.Privatized` terms that DP-KPS released
(:meth:`dpkit.kps.pipeline.KPSModel.sequences` returns them, with the
vocabulary and KDE releases and their ledger entries as provenance). The
document type and a class name must be :class:`~dpkit.privacy.marks.Public`,
written as such by the caller -- that is the caller's statement that they were
never private (for example a client's own public records; never documents of
the private corpus). A few-shot example is either such Public text or an
earlier *synthetic* text, marked :class:`~dpkit.privacy.marks.Privatized` by
:func:`synthetic_example` (the completion of a privatized prompt is
post-processing of the release). A plain ``str`` is refused with
:class:`~dpkit.validate.ParameterError`.
:func:`~dpkit.privacy.marks.compose_prompt` joins the pieces, so a DP-KPS
prompt is privatized by construction and a remote backend accepts it. The
class is never named in a DP-KPS prompt.

:func:`class_prompt` builds the "only LLM" baseline prompt, which names the class
and contains no private information.
"""

from __future__ import annotations

from typing import Sequence

from dpkit.models.voice import REDRAW_REASONS, redraw_reason
from dpkit.privacy.marks import Privatized, Public, compose_prompt, post_process, require_marked
from dpkit.validate import ParameterError

#: The DP-KPS instruction. It names no "terms" or "keyphrases": a 135M model asked to "use all of these
#: terms" read the list back or talked about the terms ("What is a medical exam question that uses these
#: terms: ..."); asked for a document "about" them it writes one (measured on the tuning sets).
DEFAULT_TEMPLATE = Public("Write one {document_type} about {keyphrases}.")
FEW_SHOT_TEMPLATE = Public(
    "Here are examples of the kind of text wanted:\n{examples}\n\n"
    "Write one new {document_type} about {keyphrases}.")
CLASS_TEMPLATE = Public("Write one {document_type} about {class_name}. Reply with the {document_type} only.")
#: With a label's public description (``--labels`` as a JSON object, given by the data owner): the same
#: instructions with the description after the document type. Only then does a DP-KPS prompt say which
#: class a text is for (the seed paper's prompts never do); the description is public, so it costs nothing.
DESCRIBED_TEMPLATE = Public("Write one {document_type} ({description}) about {keyphrases}.")
FEW_SHOT_DESCRIBED_TEMPLATE = Public(
    "Here are examples of the kind of text wanted:\n{examples}\n\n"
    "Write one new {document_type} ({description}) about {keyphrases}.")


def keyphrase_text(terms: Sequence[Privatized]) -> Privatized:
    """The comma-separated keyphrases; every term must be Privatized (released by DP-KPS)."""
    if isinstance(terms, str) or not isinstance(terms, Sequence):
        raise ParameterError("terms", type(terms).__name__, "must be a sequence of Privatized keyphrases")
    if len(terms) == 0:
        raise ParameterError("terms", terms, "must contain at least one keyphrase")
    for i, term in enumerate(terms):
        require_marked(f"terms[{i}]", term, (Privatized,))
    return Public(", ").join_marked(terms)


def synthetic_example(prompt: Privatized, completion: Privatized, max_chars: int = 300) -> Privatized:
    """A model's ``completion`` of a privatized DP-KPS ``prompt``, cut for reuse as an example.

    Guarantee: ``completion`` must be the Privatized text that dpkit's generation
    loop (:func:`dpkit.runs.generate_records`) issued for a Privatized prompt --
    a function of that prompt, the public model and a public sampling seed, so
    post-processing of the release that produced the prompt; its provenance must
    lie within the prompt's. A plain string is refused: dpkit never marks a
    caller's text. The example is the completion with its whitespace collapsed,
    cut to its first ``max_chars`` characters (a public rule), and keeps the
    provenance; using it in later prompts costs no privacy.
    """
    require_marked("prompt", prompt, (Privatized,))
    require_marked("completion", completion, (Privatized,))
    if not set(completion._provenance) <= set(prompt._provenance):
        raise ParameterError("completion", "<Privatized>", "must be the model's completion of this prompt "
                             "(its provenance is not the prompt's)")
    max_chars = int(max_chars)
    if max_chars < 1:
        raise ParameterError("max_chars", max_chars, "must be a positive number of characters")
    return post_process(completion, _example_text, max_chars=max_chars)


def _example_text(text: str, max_chars: int) -> str:
    return " ".join(text.split())[:max_chars]


def _public_text(name: str, value) -> Public:
    require_marked(name, value, (Public,))
    if not value.strip():
        raise ParameterError(name, value, "must be non-empty Public text such as Public('medical record')")
    return value


def kps_prompt(terms: Sequence[Privatized], document_type: Public, *,
               examples: Sequence[Public | Privatized] | None = None, template: Public | None = None,
               description: Public | None = None) -> Privatized:
    """A privatized DP-KPS prompt; ``examples``: Public texts or :func:`synthetic_example` outputs;
    ``description``: the label's Public description (None: the class is not named, as in the paper)."""
    fields = dict(document_type=_public_text("document_type", document_type), keyphrases=keyphrase_text(terms))
    if description is not None:
        fields["description"] = _public_text("description", description)
    if examples:
        if isinstance(examples, str) or not isinstance(examples, Sequence):
            raise ParameterError("examples", type(examples).__name__, "must be a sequence of Public example texts")
        for i, example in enumerate(examples):
            require_marked(f"examples[{i}]", example, (Public, Privatized))
            if not example.strip():
                raise ParameterError(f"examples[{i}]", example, "must be a non-empty example text")
        fields["examples"] = Public("\n").join_marked(
            [compose_prompt(Public("- {example}"), example=e) for e in examples])
        return compose_prompt(template or (FEW_SHOT_TEMPLATE if description is None else FEW_SHOT_DESCRIBED_TEMPLATE),
                              **fields)
    return compose_prompt(template or (DEFAULT_TEMPLATE if description is None else DESCRIBED_TEMPLATE), **fields)


def class_prompt(document_type: Public, class_name: Public) -> Public:
    """The "only LLM" baseline prompt: names the class (Public text), uses no private data."""
    return compose_prompt(CLASS_TEMPLATE, document_type=_public_text("document_type", document_type),
                          class_name=_public_text("class_name", class_name))


def generate_texts(backend, prompts: Sequence, *, max_new_tokens: int = 64, temperature: float = 0.7,
                   seed: int = 0) -> list[str]:
    """One completion per prompt through a :mod:`dpkit.backends` backend (post-processing of the prompts)."""
    prompts = list(prompts)
    if not prompts:
        raise ParameterError("prompts", prompts, "must contain at least one prompt")
    return [t.strip() for t in backend.generate_batch(prompts, max_new_tokens=max_new_tokens,
                                                      temperature=temperature, seed=seed)]


def redraw_failed(texts: dict, terms: dict, generate, *, document_type: str, rounds: int = 2) -> tuple[dict, dict]:
    """Texts that fail the voice's public redraw rule, drawn again: post-processing, no privacy spent.

    ``texts``: key -> a released text; ``terms``: key -> the privatized keyphrases of its
    prompt; ``generate(keys, round)`` -> key -> a new completion of each key's OWN prompt,
    sampled with a public seed of that round (a child of the run's seed, never seed + k).
    In each of ``rounds`` rounds every text for which
    :func:`dpkit.models.voice.redraw_reason` gives a reason (empty, under 3 words,
    assistant talk, a decoding loop, or its keyphrases read back) is drawn again; the
    new completion replaces it when it passes the rule, or when it fails for a lesser
    reason (:data:`~dpkit.models.voice.REDRAW_REASONS`, worst first). A text still failing
    after the last round is kept (and counted by the text measures). The rule reads released texts and the
    privatized keyphrases only, so the choice is a function of the release: it costs
    no budget. Returns ``(texts, redraws)``, ``redraws`` key -> the reasons of its redraws.
    """
    texts = dict(texts)
    redraws: dict = {}
    rounds = int(rounds)
    if rounds < 0:
        raise ParameterError("rounds", rounds, "must be a number of rounds >= 0")
    for round_ in range(1, rounds + 1):
        failed = {k: redraw_reason(t, keyphrases=[str(x) for x in terms[k]], document_type=document_type)
                  for k, t in texts.items()}
        failed = {k: why for k, why in failed.items() if why}
        if not failed:
            break
        new = generate(list(failed), round_)
        for key, why in failed.items():
            redraws.setdefault(key, []).append(why)
            now = redraw_reason(new[key], keyphrases=[str(x) for x in terms[key]], document_type=document_type)
            if now is None or REDRAW_REASONS.index(now) > REDRAW_REASONS.index(why):
                texts[key] = new[key]
    return texts, redraws
