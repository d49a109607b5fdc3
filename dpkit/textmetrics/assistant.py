"""Assistant talk: text in which a chat model talks to its user instead of writing the document.

A synthetic data set should read like the data. A small instruct model asked to
"write a health news tweet" often answers as an assistant instead: it apologises,
offers help, says it is an AI, refuses, announces its answer ("Sure, here is a
tweet…"), repeats the instruction back ("…using all the terms", "keyphrases"), asks
for more information ("Can you please provide me with the information you need?"),
says it does not know what to write ("I'm not sure what to say, but …", "I'm a little
bit confused about the ham") or talks about the task, the prompt or the label ("the
subject of the prompt", "a question with the label Surgery", "[company_name]").
None of that is a text of the data set.

:data:`ASSISTANT_PATTERNS` is the public list, by kind; :func:`is_assistant_talk`
says whether a text matches any of them (case-insensitive) and
:func:`assistant_share` gives the share of texts that do. The list is public
(it reads no data, so anyone may apply it to a release, and a generator may use it
to ban phrases). Its false positives are counted on every text of the eleven corpora the
project bundles (health tweets, Rotten Tomatoes, medical questions, news, Commons
speeches, online questions, everyday situations and problems, general questions, short
passages, and the question collections of the eighth held-out set, counted after the list
was last changed): at most 0.32% of a corpus (12 of 3,786 whole news articles), 0 in six of
them; ``tests/test_textmetrics_assistant_fpr.py`` recounts each corpus and holds the
rate at most 0.5%. The patterns were narrowed while reading what they flagged there, so
these are measured rates on those corpora, not a promise for unseen data.

The patterns aim at phrases a real document of these kinds practically never
contains: a refusal counts when it refuses a task ("I can't help/write/provide…")
or is the whole text ("I can't."), not when a reviewer "can't recommend" a film;
"Here is" counts when it announces a kind of text ("Here is a tweet…", "Here's a
rewritten version…"). So the share is a lower bound on degenerate text: a bare
list of keyphrases, or talk the list does not name, is not counted.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

# The kinds of text the preamble and echo patterns know by name.
_KINDS = (r"(?:tweet|review|text|sentence|paragraph|response|summary|rewrite|paraphrase|headline|caption|"
          r"snippet|draft|attempt|output|revision|rewritten version|revised version|new version|shorter version)s?")

#: The public pattern list, by kind of assistant talk (regular expressions, matched case-insensitively).
ASSISTANT_PATTERNS: dict[str, tuple[str, ...]] = {
    # "I'm sorry, but…", "I apologize for the confusion", "my apologies"
    "apology": (
        r"\b(?:i apologi[sz]e|my apologies) (?:for|about) (?:the|any|my) (?:[\w-]+ )?(?:confusion|misunderstanding|"
        r"mistake|error|inconvenience|oversight)\b",
        r"\b(?:i apologi[sz]e|my apologies),? but (?:i (?:can(?:no|')?t|cannot|am not|'m not|am unable|'m unable|don't|"
        r"do not|must)|as an?)\b",
        r"\bsorry (?:for|about) (?:the|any|my) (?:confusion|misunderstanding|mistake|error)\b",
        r"\bi(?:'m| am) sorry,? (?:but )?(?:i (?:can(?:no|')?t|cannot|am not able|'m not able|am unable|'m unable|"
        r"don't (?:have|understand|know what)|do not (?:have|understand))|as an?)\b",
        r"\bsorry (?:for|about|if) (?:any |the )?(?:[\w-]+ ){0,2}confusion\b",
    ),
    # "How can I help you?", "I'm here to help", "Let me know if you need…", "Hope this helps"
    "offer_of_help": (
        r"\bhow (?:can|may) i (?:help|assist)\b",
        r"\b(?:what|anything(?: else)?) (?:can|may|could) i (?:help|assist|do for)\b",
        r"\bi(?:'m| am) (?:here|ready|happy|glad|always here) to (?:help|assist)\b",
        r"\bi(?:'d| would) be (?:happy|glad|delighted) to (?:help|assist|write|create|provide)\b",
        r"\bhappy to (?:help|assist)\b",
        r"\bi(?:'m| am) (?:so |very )?(?:happy|glad) to (?:help|assist|provide|write|create)\b",
        r"\bglad you reached out\b",
        r"\blet me know if you (?:need|have|want|would|'d)\b",
        r"\bfeel free to (?:ask me|ask if|let me know|reach out to me)\b",
        r"\bhope (?:this|that) helps\b",
        r"\bis there anything else (?:i|you(?:'d| would) like me)\b",
        r"\bif you have any (?:other |more |further )?(?:questions|requests)\b[^.?!]{0,20}?(?:feel free to ask|let me "
        r"know|(?:don't|do not) hesitate to ask|i(?:'m| am) here|i(?:'d| would) be (?:happy|glad))",
        r"\banything else (?:you(?:'d| would) like|you want|i can)\b",
        r"\bi (?:can|could|will|'ll) (?:help|assist) you\b",
        r"\blet me (?:help|assist)\b",
        r"\b(?:help|assist) (?:you )?with (?:your|this|that) (?:[\w-]+ ){0,2}?(?:project|task|request|writing|essay|"
        r"assignment)\b",
        r"\blet me know (?:what|which|how|whether)\b",
    ),
    # "Can you please provide me with the information you need?", "I need more context", "Please share the details"
    "request_for_information": (
        r"\b(?:can|could|would|will) you (?:please |kindly )?(?:provide|give|send|share|tell) me (?:with )?(?:the |some |"
        r"more |any |additional |further |a few )?(?:[\w-]+ )?(?:information|details|context|specifics)\b",
        r"\bplease (?:provide|give|share|send) (?:me )?(?:with )?(?:the |some |more |any |additional |further |a few )?"
        r"(?:specific |relevant )?(?:information|details|context|specifics)\b",
        r"\b(?:information|details|context) (?:that )?you need\b",
        r"\b(?:i need|i'd need|i would need|i'll need|i will need|without) (?:a bit |a little |a few |some )?(?:more|"
        r"additional|further) (?:information|context|details|specifics)\b",
        r"\bbased on the (?:information|text|details|context|description) (?:you(?:'ve| have)? )?(?:provided|given|"
        r"shared)\b",
        r"\bi understand (?:that )?you(?:'re| are| want| need| have)\b",
    ),
    # "I'm not sure what to say, but …", "I'm a little bit confused about the ham"
    "uncertainty": (
        r"\bi(?:'m| am) (?:not (?:really |quite |entirely |too )?sure|unsure) (?:what|how) to (?:say|write|respond|"
        r"answer|reply)\b",
        r"\bi(?:'m| am) (?:(?:a )?(?:little |tiny |bit |tad )*|so |very |really |quite |slightly |kind of |kinda )?"
        r"(?:confused|puzzled)\b",
        r"\b(?:confused|unsure|not sure) (?:about|by|with|of) (?:the|this|your) (?:[\w-]+ ){0,2}?(?:label|task|prompt|"
        r"instructions?|request|category)s?\b",
    ),
    # talk about the task instead of doing it: "the subject of the prompt", "the given sentence",
    # "a question with the label Surgery", "Label: ham", template slots such as "[company_name]"
    "task_meta": (
        r"\b(?:the|this|your|my|given|above) prompt\b",
        r"\bthe (?:given|above|provided) (?:sentence|text|passage|paragraph|prompt|instructions?|task|keywords?|words|"
        r"label)s?\b",
        r"\b(?:complete|do|finish|perform|understand) (?:this|the|your) task\b|\bthe task (?:is|was) to\b",
        r"\blabel\s*:\s*\w",
        r"\b(?:question|text|tweet|message|review|sentence|passage|speech) (?:with|under) (?:the |a )?label\b",
        r"\[(?:your (?:name|company|email|address|website|phone|business|location)|insert\b[^\]]{0,30}|company[ _]name|"
        r"product[ _]name|name|date|original (?:sentence|text)|[a-z]+_[a-z]+)\]",
        r"\b(?:the|this) sentence (?:is not|isn't) (?:grammatical|correct|clear)|\bgrammatically (?:correct|"
        r"incorrect)\b",
    ),
    # "As an AI language model…", "I am a helpful AI named SmolLM", "I'm an assistant"
    "ai_self_reference": (
        r"\bas an? (?:ai|artificial intelligence|language model|large language model|assistant|chatbot)\b",
        r"\bi(?:'m| am) (?:just )?(?:an?|your) (?:helpful |friendly |virtual )?(?:ai|assistant|language model|"
        r"chatbot|bot)\b",
        r"\bi(?:'m| am) an ai\b",
        r"\bi(?:'m| am) (?:a|an) (?:[\w-]+ ){0,3}(?:ai|chatbot|language model)\b",
        r"\bhelpful (?:ai|assistant)\b",
        r"\bai (?:language )?model\b",
        r"\bsmollm\b",
        r"\b(?:trained|developed|created) by hugging ?face\b",
    ),
    # "I can't help with that", "I cannot fulfil…", a text that is only "I can't."
    "refusal": (
        r"\bi(?: can(?:no|')?t| cannot| am unable to|'m unable to| won'?t be able to) (?:help (?:you|with)|assist|provide|"
        r"create|generate|write|fulfil|fulfill|comply|complete (?:this|that|the|your)|answer|browse|access|produce)\b",
        r"^\W*i(?: can(?:no|')?t| cannot| won'?t| am unable|'m unable)\W*$",
        r"\bi(?:'m| am) not able to (?:help|assist|provide|create|generate|write|fulfil|fulfill|comply)\b",
    ),
    # "Sure! …", "Certainly, …" at the start; "Here is a tweet …", "Here's a rewritten version …"
    "preamble": (
        r"^\W*(?:sure|certainly|of course|absolutely|okay|ok)\s*[!,.:]\s*(?:here|i(?:'d| would| will|'ll| can)|let me|"
        r"below)\b",
        r"^\W*(?:sure|certainly|absolutely)\s*!",
        r"\bhere(?:'s| is| are) (?:a|an|the|your|my|one|some|two|three|\d+)\b(?:\s+[\w'-]+){0,5}?\s+" + _KINDS
        + r"\b",
        r"^\W*(?:below|the following) is (?:a|an|the|my)\b(?:\s+[\w'-]+){0,5}?\s+" + _KINDS + r"\b",
    ),
    # "… using all the terms", "keyphrases", "tweet about …", "the tweet uses all the terms"
    "instruction_echo": (
        r"\b(?:all|each|every|both) (?:of )?(?:the |these |those |your |my |above |given |following )?"
        r"(?:terms|keyphrases|key phrases|keywords|key words|phrases|words) (?:mentioned|given|provided|listed|above)",
        r"\busing (?:all |each |every )?(?:of )?(?:the |these |those |your |above |given |following )"
        r"(?:terms|keyphrases|key phrases|keywords|key words)\b",
        r"\b(?:these|above|given|provided) (?:terms(?! of\b)|keyphrases|key phrases|keywords)\b",
        r"\b(?:uses?|using|use of|employs|incorporates?|includes?) (?:all|each|every) (?:of )?(?:the |these |those |"
        r"your |my |above |given |following |provided |mentioned |described )?(?:[\w-]+ ){0,2}"
        r"(?:terms|keyphrases|key phrases|keywords|key words)\b",
        r"\bkey ?phrases?\b",
        r"^\W*(?:a |one )?(?:[\w-]+ ){0,3}tweet (?:about|on|that)\b",
        r"\bwrite (?:a|one) (?:[\w-]+ ){0,3}(?:tweet|review)\b",
        r"\bhealth news tweet\b",
        r"\bone-sentence movie review\b",
        r"\b(?:the|this|my) (?:tweet|review|text|sentence) (?:uses|includes|incorporates|contains) (?:all|each|every)\b",
    ),
}

#: Every pattern of :data:`ASSISTANT_PATTERNS`, compiled (case-insensitive), in one tuple.
COMPILED: tuple[re.Pattern, ...] = tuple(re.compile(p, re.IGNORECASE) for ps in ASSISTANT_PATTERNS.values()
                                         for p in ps)
_BY_KIND = {kind: tuple(re.compile(p, re.IGNORECASE) for p in ps) for kind, ps in ASSISTANT_PATTERNS.items()}


def _document_type_pattern(document_type: str | None) -> re.Pattern | None:
    """The instruction's own document type ("health news tweet") as an echo pattern (None: none given)."""
    words = str(document_type or "").split()
    if len(words) < 2:  # a one-word type ("tweet", "review") is a word real texts use
        return None
    return re.compile(r"\b" + r"\s+".join(map(re.escape, words)) + r"\b", re.IGNORECASE)


def assistant_kinds(text: str, document_type: str | None = None) -> tuple[str, ...]:
    """The kinds of :data:`ASSISTANT_PATTERNS` that ``text`` matches, in the list's order.

    ``document_type`` (the instruction's document type, e.g. "health news tweet"):
    when it has two words or more, the text naming it counts as ``instruction_echo``.
    """
    text = str(text)
    kinds = [kind for kind, patterns in _BY_KIND.items() if any(p.search(text) for p in patterns)]
    own = _document_type_pattern(document_type)
    if own is not None and own.search(text) and "instruction_echo" not in kinds:
        kinds.append("instruction_echo")
    return tuple(kinds)


def is_assistant_talk(text: str, document_type: str | None = None) -> bool:
    """Whether ``text`` matches any pattern of the public list (see :func:`assistant_kinds`)."""
    text = str(text)
    if any(p.search(text) for p in COMPILED):
        return True
    own = _document_type_pattern(document_type)
    return own is not None and own.search(text) is not None


def assistant_share(texts: Sequence[str] | Iterable[str], document_type: str | None = None) -> float:
    """Share of ``texts`` that are assistant talk (:func:`is_assistant_talk`); ``nan`` for no texts."""
    flags = [is_assistant_talk(t, document_type) for t in texts]
    return sum(flags) / len(flags) if flags else float("nan")
