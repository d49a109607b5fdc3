"""The data's voice: public rules that make a small instruct model write a document, not talk about it.

A small chat model (SmolLM2-135M-Instruct) answers an instruction as an
assistant: "Sure, here is a tweet...", "I'm sorry, but...", "I am a helpful AI
named SmolLM...". :class:`Voice` bundles four public transformations of a
generation request that move it from answering to writing:

* ``system``: a system message that states what is written (it also replaces
  the chat template's default persona, "You are a helpful AI assistant named
  SmolLM", which otherwise leaks into the texts);
* ``prefill``: the assistant's turn is opened with this text (DP-KPS: ``Here is the
  {document_type}:`` and an opening quotation mark; private prediction: the quotation mark) and the model
  continues it (a raw continuation after the chat template; the prefill itself
  is not part of the returned text);
* ``stop``: the returned text is cut at the first stop sequence (after leading
  whitespace), and decoding of that row ends there;
* ``banned``: opening phrases (:data:`BANNED_OPENINGS`) the text may not START
  with. Applied to the logits: at the first tokens of a text, the token that
  would complete a banned phrase gets a bias of minus infinity (it cannot be
  drawn), the rule Hugging Face calls ``bad_words_ids`` restricted to the start
  of the text. It is a function of the phrases, the tokenizer and the tokens
  generated so far -- never of any prompt -- so in private prediction it is the
  same public restriction of the candidate tokens for every row;
* ``min_new_tokens``: the end-of-text token is not allowed before this many
  tokens (a public minimum length). It is a floor on where a text may end, not a
  length: a ``max_new_tokens`` below it is allowed (``pp``'s ``--smoke`` decodes 6
  tokens under its default floor of 8), and every text then runs to ``max_new_tokens``.

Everything here is public configuration: it holds no private text and costs
no privacy. :func:`document_voice` builds the default from a document type.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

from dpkit.privacy.marks import Public
from dpkit.textmetrics.assistant import is_assistant_talk
from dpkit.textmetrics.surface import MAX_PAIR_REPEATS, pair_repeats as repeats  # noqa: F401 (re-exported)
from dpkit.validate import ParameterError, check_int

#: Assistant openings a document of the data never starts with (public list; case as written, and
#: each also with a leading space). Ordinary openings that documents do use ("I", "The", "What a")
#: are not on it: only the token that COMPLETES a phrase is banned ("I'm sorry" bans " sorry" after "I'm").
BANNED_OPENINGS: tuple[str, ...] = (
    "Sure", "Certainly", "Of course", "Absolutely", "Okay,", "Alright,",
    "Here is", "Here's", "Here are", "Hello", "Hi!", "Hi,", "Hey there", "Greetings",
    "Thank you", "Thanks for",
    "I'm sorry", "I am sorry", "Sorry,", "I apologize", "I apologise",
    "I can't", "I cannot", "I can not", "I'm unable", "I am unable", "I'm not able", "I won't",
    "I'm an AI", "I am an AI", "I'm a helpful", "I am a helpful", "I'm SmolLM", "I am SmolLM",
    "I'm happy to", "I am happy to", "I'd be happy", "I would be happy", "I'd be glad", "I'm glad to",
    "I'm ready", "I am ready", "I'm here to", "I am here to",
    "As an AI", "As a language model", "As an assistant", "As a helpful", "As a health news AI",
    "Let me", "Great question", "What can I",
    "Write one", "Write a", "Reply with", "Please give",
)

#: The assistant's turn opens with a quotation mark, so the model writes the quoted document itself.
DEFAULT_PREFILL = '"'
#: DP-KPS's opening of the assistant's turn (:func:`document_prefill`): the assistant's announcement
#: ("Here is the ...:") is already written, so what the model continues is the quoted document.
DOCUMENT_PREFILL = 'Here is the {document_type}:\n\n"'
#: Default stop sequences: the closing quotation mark, and a new line (one document is one line: a
#: tweet, a review snippet, an exam question).
DEFAULT_STOP: tuple[str, ...] = ("\n", '"')


@dataclass(frozen=True)
class Voice:
    """Public generation rules for writing documents of one type (see the module docstring)."""

    document_type: str
    system: str = ""
    prefill: str = ""
    stop: tuple[str, ...] = DEFAULT_STOP
    banned: tuple[str, ...] = BANNED_OPENINGS
    min_new_tokens: int = 0

    def __post_init__(self):
        if not isinstance(self.document_type, str) or not self.document_type.strip():
            raise ParameterError("document_type", self.document_type, "must be a non-empty description such as "
                                 "'health news tweet'")
        for name in ("system", "prefill"):
            if not isinstance(getattr(self, name), str):
                raise ParameterError(name, getattr(self, name), "must be a string")
        object.__setattr__(self, "stop", _strings("stop", self.stop))
        object.__setattr__(self, "banned", _strings("banned", self.banned))
        check_int("min_new_tokens", self.min_new_tokens, minimum=0)

    def to_dict(self) -> dict:
        return asdict(self)


def _strings(name: str, values) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ParameterError(name, values, "must be a sequence of non-empty strings")
    out = tuple(values)
    for i, v in enumerate(out):
        if not isinstance(v, str) or not v:
            raise ParameterError(f"{name}[{i}]", v, "must be a non-empty string")
    return out


def voice_system(document_type: str) -> str:
    """The default system message: the model is a writer of this document type, not an assistant.
    Short on purpose: a 135M model copies long instructions into its texts."""
    return f"You write {document_type}s."


def document_prefill(document_type: str) -> str:
    """DP-KPS's default prefill: ``Here is the {document_type}:``, a blank line and an opening quotation
    mark. The announcement a small chat model would write anyway is part of the prompt (never of the
    returned text), so it does not have to write it, and what it continues is the document. Measured
    on the medical exam questions (8 prompts per label, one seed): assistant talk 0.31 with the bare
    quotation mark, 0.06 with this prefill; health tweets and Rotten Tomatoes 0.06 -> 0.00."""
    return DOCUMENT_PREFILL.format(document_type=document_type)


def document_voice(document_type: str, *, prefill: str | None = None, stop: Sequence[str] = DEFAULT_STOP,
                   banned: Sequence[str] = BANNED_OPENINGS, min_new_tokens: int = 0) -> Voice:
    """The default :class:`Voice` for ``document_type`` (DP-KPS's): a short system message, the
    assistant's turn opened by ``prefill`` (default :func:`document_prefill`, the announcement and an
    opening quotation mark), cut at the closing mark or a new line, no assistant opening."""
    if not isinstance(document_type, str) or not document_type.strip():
        raise ParameterError("document_type", document_type, "must be a non-empty description such as "
                             "'health news tweet'")
    document_type = " ".join(document_type.split())
    return Voice(document_type, voice_system(document_type),
                 document_prefill(document_type) if prefill is None else prefill,
                 tuple(stop), tuple(banned), min_new_tokens)


# ------------------------------------------------------------------ chat rendering
def split_prefill(messages: Sequence[dict]) -> tuple[list[dict], str | None]:
    """``(messages without a trailing assistant message, its content)``; ``None`` when the chat ends
    with another role. A chat ending with an assistant message asks the model to CONTINUE that turn."""
    messages = list(messages)
    if messages and messages[-1].get("role") == "assistant":
        return messages[:-1], str(messages[-1]["content"])
    return messages, None


def with_voice(messages: Sequence[dict], voice: Voice | None) -> list[dict]:
    """The chat of a request under ``voice``: its system message first (unless the chat has one),
    its prefill as an opened assistant turn (unless the chat already ends with one)."""
    messages = [dict(m) for m in messages]
    if voice is None:
        return messages
    # the voice is public configuration, sent as Public text
    if voice.system and not any(m["role"] == "system" for m in messages):
        messages = [{"role": "system", "content": Public(voice.system)}] + messages
    if voice.prefill and messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": Public(voice.prefill)})
    return messages


# ------------------------------------------------------------------ stop sequences
def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` (leading whitespace dropped) up to its first stop sequence, and whether one occurred."""
    body = text.lstrip()
    cut = min((i for i in (body.find(s) for s in stop) if i >= 0), default=-1)
    if cut < 0:
        return text, False
    return body[:cut], True


# ------------------------------------------------------------------ banned openings
def opening_sequences(tokenize: Callable[[str], list[int]], phrases: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    """Token ids of every phrase as a text would start with it: as written and after one space
    (a prefill ending in a space, or none, tokenizes either way). Sorted, duplicates removed."""
    seqs = set()
    for phrase in phrases:
        for variant in (phrase, " " + phrase):
            ids = tuple(int(t) for t in tokenize(variant))
            if ids:
                seqs.add(ids)
    return tuple(sorted(seqs))


def banned_next(generated: Sequence[int], sequences: Sequence[Sequence[int]]) -> set[int]:
    """Tokens that may not come next: the last token of each banned sequence whose other tokens are
    exactly the text generated so far. A function of the generated (released) tokens and the public
    sequences only; empty once the text is longer than every banned phrase."""
    n = len(generated)
    prefix = tuple(int(t) for t in generated)
    return {int(seq[-1]) for seq in sequences if len(seq) == n + 1 and tuple(seq[:-1]) == prefix}


@dataclass
class OpeningBan:
    """:func:`banned_next` with the sequences tokenized once for one tokenizer."""

    sequences: tuple[tuple[int, ...], ...] = field(default_factory=tuple)

    @classmethod
    def build(cls, tokenize: Callable[[str], list[int]], phrases: Sequence[str]) -> "OpeningBan":
        return cls(opening_sequences(tokenize, phrases) if phrases else ())

    @property
    def reach(self) -> int:
        """How many generated tokens the rule can still act on (the longest phrase)."""
        return max((len(s) for s in self.sequences), default=0)

    def __call__(self, generated: Sequence[int]) -> set[int]:
        if len(generated) >= self.reach:
            return set()
        return banned_next(generated, self.sequences)


def repeated_ngram_next(generated: Sequence[int], n: int) -> set[int]:
    """Tokens that would complete an ``n``-gram the text already holds (``n`` >= 2; 0 = no rule).

    With ``g = generated``, the tokens ``g[i + n - 1]`` for every earlier ``i`` whose
    ``g[i : i + n - 1]`` equals the text's last ``n - 1`` tokens. A function of the generated
    (released) tokens and the public ``n`` only. It stops the loops a sharp decoder falls into
    ("A New Normal: A New Normal: ..."): no ``n``-gram occurs twice in a text it shapes.
    """
    if not n or len(generated) < n:
        return set()
    g = [int(t) for t in generated]
    tail = g[len(g) - n + 1:]
    return {g[i + n - 1] for i in range(len(g) - n + 1) if g[i:i + n - 1] == tail}


def check_no_repeat_ngram(n) -> int:
    """``n`` if it is 0 (no rule) or an integer of at least 2; ParameterError naming it otherwise."""
    n = check_int("no_repeat_ngram", n, minimum=0)
    if n == 1:
        raise ParameterError("no_repeat_ngram", n, "must be 0 (no rule) or at least 2 (1 would forbid any "
                                                   "repeated token)")
    return n


class DecodingRules:
    """A voice's rules bound to one tokenizer, for decoders that pick one token at a time.

    ``blocked(tokens)``: the token ids that may not come next after the text's
    ``tokens`` (a banned opening's completing token; before ``min_new_tokens``
    tokens, the end tokens and every token whose text holds a stop sequence; with
    ``no_repeat_ngram`` n, every token that would repeat an n-gram of the text).
    ``ended(tokens)``: a stop sequence occurred. ``cut(text)``: the text up to it.
    All three are functions of the text's own tokens and public constants only:
    in private prediction every row (public and private) continues the same
    released tokens, so the rule is the same restriction for all of them.
    """

    def __init__(self, tokenize: Callable[[str], list[int]], detokenize: Callable[[Sequence[int]], str],
                 vocab_size: int, end_ids: Sequence[int], *, stop: Sequence[str] = (),
                 banned: Sequence[str] = (), min_new_tokens: int = 0, no_repeat_ngram: int = 0):
        self.ban = OpeningBan.build(tokenize, banned)
        self.no_repeat_ngram = check_no_repeat_ngram(no_repeat_ngram)
        self.stop = _strings("stop", stop)
        self.min_new_tokens = check_int("min_new_tokens", min_new_tokens, minimum=0)
        self.end_ids = frozenset(int(t) for t in end_ids)
        self._detokenize = detokenize
        self._vocab_size = int(vocab_size)
        self._stop_tokens: frozenset[int] | None = None

    @property
    def active(self) -> bool:
        return bool(self.ban.sequences or self.stop or self.min_new_tokens or self.no_repeat_ngram)

    def stop_tokens(self) -> frozenset[int]:
        """Token ids whose own text holds a stop sequence (computed once)."""
        if self._stop_tokens is None:
            self._stop_tokens = frozenset(
                t for t in range(self._vocab_size) if any(s in self._detokenize([t]) for s in self.stop)) \
                if self.stop else frozenset()
        return self._stop_tokens

    def blocked(self, tokens: Sequence[int]) -> set[int]:
        out = self.ban(tokens)
        if len(tokens) < self.min_new_tokens:
            out |= self.end_ids | self.stop_tokens()
        if self.no_repeat_ngram:
            out |= repeated_ngram_next(tokens, self.no_repeat_ngram)
        return out

    def ended(self, tokens: Sequence[int]) -> bool:
        return bool(self.stop) and bool(tokens) and cut_at_stop(self._detokenize(tokens), self.stop)[1]

    def cut(self, text: str) -> str:
        return cut_at_stop(text, self.stop)[0] if self.stop else text


# ------------------------------------------------------------------ redrawing a failed text
#: A text at least this share of whose words are words of its own keyphrases is a list, not a document.
MAX_KEYPHRASE_SHARE = 0.6
#: Fewer words than this is not a document (the text measures' "short" threshold).
MIN_WORDS = 3

_WORD = re.compile(r"[\w'-]+")


#: The reasons of :func:`redraw_reason`, worst first: a redrawn text that still fails replaces the old one
#: only when its reason comes later in this list (a loop is better data than assistant talk or nothing).
REDRAW_REASONS = ("empty", "short", "assistant", "keyphrase_list", "repetition")


def keyphrase_share(text: str, keyphrases: Sequence[str]) -> float:
    """Share of ``text``'s words that are words of ``keyphrases`` (0 for a text without words)."""
    words = [w.lower() for w in _WORD.findall(str(text))]
    vocab = {w.lower() for phrase in keyphrases for w in _WORD.findall(str(phrase))}
    return sum(w in vocab for w in words) / len(words) if words else 0.0


def redraw_reason(text: str, *, keyphrases: Sequence[str] = (), document_type: str | None = None) -> str | None:
    """Why ``text`` is not a document of the data, or ``None`` when it may be one.

    The public rule (in this order): ``"empty"``; ``"short"``: fewer than :data:`MIN_WORDS`
    words; ``"assistant"``: it matches the public assistant-talk list
    (:func:`dpkit.textmetrics.assistant.is_assistant_talk`, the document type counted as an
    echo); ``"repetition"``: a pair of consecutive words occurs :data:`MAX_PAIR_REPEATS` times or
    more (a decoding loop: "Daily Daily Daily ..."); ``"keyphrase_list"``: at least :data:`MAX_KEYPHRASE_SHARE` of its words are words of
    ``keyphrases``, the terms its prompt gave (the list read back). A text ending with a colon
    is not redrawn: 46% of the medical exam questions end so ("... is most common in:"). On the
    real texts of the bundled sets (no keyphrases) the rule flags 1.1% of Rotten Tomatoes (0.7%
    short, 0.4% repetition), 0% of the health tweets and 1.1% of the medical questions. It reads the released
    text and, for DP-KPS, the privatized keyphrases of its own prompt: never a record.
    """
    text = str(text).strip()
    if not text:
        return "empty"
    if len(text.split()) < MIN_WORDS:
        return "short"
    if is_assistant_talk(text, document_type):
        return "assistant"
    if repeats(text) >= MAX_PAIR_REPEATS:
        return "repetition"
    if keyphrases and keyphrase_share(text, keyphrases) >= MAX_KEYPHRASE_SHARE:
        return "keyphrase_list"
    return None


# ------------------------------------------------------------------ a leading echo of the instruction
#: Words that may join the echoed document type and label name in a leading announcement
#: ("The medical exam question is:", "Another review 2 -", "Label: Dental:").
_ECHO_JOINERS = ("the", "a", "an", "this", "another", "one", "new", "my", "our", "here", "is", "with", "for", "of",
                 "example", "sample")
_SEPARATOR = r"\s*(?:[:|]|\s[-–—](?=\s))\s*"


_LETTERS = r"[^\W\d_]+"   # a run of letters, of any script


def _word_variants(word: str) -> str:
    """A word of the document type as a pattern: itself, its plural, and longer forms ("exam" -> "examination")."""
    return re.escape(word.lower()) + r"[\w-]*"


def echo_pattern(document_type: str, labels: Sequence[str] = ()) -> re.Pattern:
    """The public pattern of a leading echo: at the start of a text, one or more words of
    ``document_type`` (each also with a longer ending: "exam" matches "examination") or of a label
    name (also split by a space or hyphen: "Good Health" for "goodhealth"), mixed with articles and joiners (:data:`_ECHO_JOINERS`) and numbers, ending in a
    colon, a bar or a spaced dash, repeated ("A medical exam question is: Surgery: ...", "Label: Dental:").
    At least one word of the document type, "label" or a label name must occur (a bare "The:" is not an
    echo). Words are runs of letters of any script ("日本語のツイート" is one word); a document type without a
    word of 3 letters ("ab") adds none, and the echo is then "label" or a label name only: any public
    document type gives a pattern, so the rule never refuses a text after the budget is spent."""
    words = {w for w in re.findall(_LETTERS, str(document_type)) if len(w) > 2}
    words.add("label")
    names = {w.lower() for label in labels for w in re.findall(_LETTERS, str(label)) if len(w) > 1}
    # a label name may come back split ("goodhealth" -> "Good Health", "Nytimes-Health")
    patterns = [_word_variants(w) for w in words] + [r"[\s-]?".join(map(re.escape, n)) + "s?" for n in names]
    own = "|".join(sorted(patterns, key=len, reverse=True))
    joiner = "|".join(_ECHO_JOINERS) + r"|\d+[.)]?|#\d+"
    unit = rf"(?:(?:{joiner})\s+)*(?:{own})(?:\s+(?:(?:{own})|(?:{joiner})))*{_SEPARATOR}"
    return re.compile(rf"^\W*(?:{unit})+", re.IGNORECASE)


def strip_echo(text: str, document_type: str, labels: Sequence[str] = (), *, min_words: int = MIN_WORDS) -> str:
    """``text`` without a leading echo of its instruction (:func:`echo_pattern`): "The medical exam question:
    How to prevent dental cavities" -> "How to prevent dental cavities". A text that would keep fewer than
    ``min_words`` words is returned unchanged.

    Post-processing: it reads the released text, the public document type and the public label
    names only, so applying it to a differentially private output costs no privacy (in private
    prediction, the same rule for every released text)."""
    text = str(text)
    match = echo_pattern(document_type, labels).match(text)
    if match is None:
        return text
    rest = text[match.end():].lstrip(" \"'")
    return rest if len(rest.split()) >= min_words else text
