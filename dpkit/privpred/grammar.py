"""Schema-constrained candidates: a public rule under which every finished record is a valid instance.

A :class:`JsonGrammar` describes a flat JSON object, its fields in order, each a
free one-line string, a string from a fixed list, or a positive integer, laid
out as ``json.dumps(record, indent=2)`` writes it. :func:`compile_grammar`
binds it to a tokenizer. At every step of an example, :class:`GrammarState`
gives the token ids that keep the text a prefix of some valid record:

* inside a value, the tokens whose characters the value may take -- a string:
  no quote, backslash or control character until its closing quote, and not
  empty; a choice: a prefix of an allowed value; an integer: digits, the first
  non-zero. A token may close a value and go on into the layout (``",``);
* between values the layout (``",\\n  "review": "``) is a constant. ONE token
  is allowed: the next token of the layout's own tokenization. After the
  closing brace, only end-of-sequence.

Public caps keep every record inside ``max_new_tokens``: a string is closed
after ``max_string_tokens`` of its tokens, an integer after ``max_digits``
digits; :meth:`CompiledGrammar.longest_record` bounds a record's length and
decoding refuses a ``max_new_tokens`` below it.

Privacy. The candidate set at a step is a function of the public grammar and
of the tokens already released, never of the private prompts. The exponential
mechanism over ANY public candidate set has the same cost per private token
(the clipped logits' sensitivity does not depend on which tokens compete), so
restricting it changes nothing in Theorem 1 of {cite}`amin2024private`. A step
with a single candidate is *forced*: its token is emitted without reading the
private rows, without a sparse-vector query and without randomness. Whether a
step is forced is itself a public fact. The guarantee at the cap ``r`` is
therefore the unconstrained one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dpkit.validate import ParameterError, check_int

KINDS = ("string", "choice", "integer")
_STRING, _CHOICE, _INTEGER, _LAYOUT = "string", "choice", "integer", "layout"


@dataclass(frozen=True)
class JsonField:
    """One field: ``kind`` is ``string`` (one non-empty line), ``choice`` (one of ``choices``) or ``integer`` (>= 1)."""

    name: str
    kind: str
    choices: tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in '"\\\n'):
            raise ParameterError("name", self.name, "must be a non-empty field name without quotes, "
                                                     "backslashes or line breaks")
        if self.kind not in KINDS:
            raise ParameterError("kind", self.kind, f"must be one of {KINDS}")
        choices = tuple(self.choices)
        if self.kind == _CHOICE:
            if not choices or not all(isinstance(c, str) and c and not any(ch in c for ch in '"\\\n')
                                      for c in choices):
                raise ParameterError("choices", self.choices, "must be non-empty strings without quotes, "
                                                              "backslashes or line breaks")
        elif choices:
            raise ParameterError("choices", self.choices, f"are only for kind 'choice', not {self.kind!r}")
        object.__setattr__(self, "choices", choices)


@dataclass(frozen=True)
class JsonGrammar:
    """A flat record's fields in order, the text the prompt already opened it with, and the public caps."""

    fields: tuple[JsonField, ...]
    prefix: str = ""
    max_string_tokens: int = 32
    max_digits: int = 4

    def __post_init__(self):
        fields = tuple(self.fields)
        if not fields or not all(isinstance(f, JsonField) for f in fields):
            raise ParameterError("fields", self.fields, "must be a non-empty sequence of JsonField")
        if len({f.name for f in fields}) != len(fields):
            raise ParameterError("fields", [f.name for f in fields], "must have distinct names")
        object.__setattr__(self, "fields", fields)
        check_int("max_string_tokens", self.max_string_tokens, minimum=1)
        check_int("max_digits", self.max_digits, minimum=1)
        if not isinstance(self.prefix, str):
            raise ParameterError("prefix", self.prefix, "must be a string")
        state = _start(self.segments())
        for ch in self.prefix:
            state = _feed(self.segments(), state, ch, self.max_digits)
            if state is None:
                raise ParameterError("prefix", self.prefix, "must be the start of a record in this grammar's "
                                                            "layout (json.dumps(record, indent=2))")

    def segments(self) -> tuple:
        """The layout as alternating constant text and values: ``(LAYOUT, text)`` / ``(kind, field)``."""
        out, text = [], "{\n"
        for i, f in enumerate(self.fields):
            text += f'  "{f.name}": ' + ('"' if f.kind != _INTEGER else "")
            out += [(_LAYOUT, text), (f.kind, f)]
            text = ('"' if f.kind != _INTEGER else "") + ("," if i < len(self.fields) - 1 else "") + "\n"
        out.append((_LAYOUT, text + "}"))
        return tuple(out)


# ----------------------------------------------------------- character level
# A state is (segment index, detail): layout -> position in its text; string -> started?;
# choice -> the characters typed; integer -> the digits typed. Index == len(segments): done.

def _start(segments):
    return _enter(segments, 0)


def _enter(segments, i):
    if i >= len(segments):
        return (i, None)
    kind = segments[i][0]
    return (i, {_LAYOUT: 0, _STRING: False, _CHOICE: "", _INTEGER: 0}[kind])


def _feed(segments, state, ch, max_digits: int = 4):
    """The state after character ``ch``, or None when no valid record continues that way."""
    i, detail = state
    if i >= len(segments):
        return None
    kind, what = segments[i]
    if kind == _LAYOUT:
        if ch != what[detail]:
            return None
        return _enter(segments, i + 1) if detail + 1 == len(what) else (i, detail + 1)
    if kind == _STRING:
        if ch == '"':
            return _feed(segments, _enter(segments, i + 1), ch, max_digits) if detail else None
        if ch == "\\" or ord(ch) < 0x20 or ch == "\u2028" or ch == "\u2029" or (not detail and ch.isspace()):
            return None
        return (i, True)
    if kind == _CHOICE:
        typed = detail + ch
        if any(c.startswith(typed) for c in what.choices):
            return (i, typed)
        return _feed(segments, _enter(segments, i + 1), ch, max_digits) if detail in what.choices else None
    # integer
    if "0" <= ch <= "9" and detail < max_digits and not (detail == 0 and ch == "0"):
        return (i, detail + 1)
    return _feed(segments, _enter(segments, i + 1), ch, max_digits) if detail else None


# ---------------------------------------------------------------- token level
class CompiledGrammar:
    """A :class:`JsonGrammar` bound to a tokenizer: candidate sets per state, cached."""

    def __init__(self, grammar: JsonGrammar, tokenizer, eos_token_id: int):
        self.grammar, self.tokenizer, self.eos = grammar, tokenizer, int(eos_token_id)
        self.segments = grammar.segments()
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        vocab = len(tokenizer)
        pieces = tokenizer.batch_decode([[i] for i in range(vocab)], clean_up_tokenization_spaces=False)
        self.pieces = [("" if i in special or "\ufffd" in p else p) for i, p in enumerate(pieces)]
        self._sets: dict = {}
        self._layout_tokens: dict = {}
        self._longest: int | None = None

    def feed(self, state, ch):
        return _feed(self.segments, state, ch, self.grammar.max_digits)

    def feed_text(self, state, text: str):
        for ch in text:
            state = self.feed(state, ch)
            if state is None:
                return None
        return state

    def layout_token(self, state) -> int:
        """The next token of the layout text's own tokenization from this position (public constant)."""
        i, pos = state
        if (i, pos) not in self._layout_tokens:
            rest = self.segments[i][1][pos:]
            ids = self.tokenizer(rest, add_special_tokens=False)["input_ids"]
            piece = self.pieces[ids[0]] if ids else ""
            if not piece or not rest.startswith(piece):
                raise ParameterError("grammar", self.grammar, f"the tokenizer does not write the layout {rest!r} "
                                                              "token by token")
            self._layout_tokens[(i, pos)] = int(ids[0])
        return self._layout_tokens[(i, pos)]

    def candidates(self, state) -> torch.Tensor:
        """Sorted ids of every token whose characters keep the record valid from ``state`` (cached)."""
        key = state
        if key not in self._sets:
            ok = [t for t, p in enumerate(self.pieces) if p and self.feed_text(state, p) is not None]
            self._sets[key] = torch.tensor(ok, dtype=torch.long)
        return self._sets[key]

    def longest_record(self) -> int:
        """An upper bound on the tokens written after the prefix, end-of-sequence included, under the caps."""
        if self._longest is None:
            first, detail = self.feed_text(_start(self.segments), self.grammar.prefix)
            total = 1
            for i in range(first, len(self.segments)):
                kind, what = self.segments[i]
                if kind == _LAYOUT:  # a value's last token may have written some of it: every suffix
                    start = detail if i == first else 0
                    total += max(len(self.tokenizer(what[p:], add_special_tokens=False)["input_ids"])
                                 for p in range(start, len(what)))
                elif kind == _STRING:  # its capped tokens, then one that may close it
                    total += self.grammar.max_string_tokens + 1
                elif kind == _CHOICE:
                    total += max(len(c) for c in what.choices) + 1
                else:
                    total += self.grammar.max_digits + 1
            self._longest = total
        return self._longest

    def start(self) -> "GrammarState":
        return GrammarState(self)


class GrammarState:
    """Where one example stands in the grammar; :meth:`step` says what may come next."""

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self.state = compiled.feed_text(_start(compiled.segments), compiled.grammar.prefix)
        self.value_tokens = 0

    def step(self) -> tuple[int | None, torch.Tensor | None]:
        """``(forced token, None)`` when one token is allowed, else ``(None, sorted candidate ids)``."""
        c = self.compiled
        i, detail = self.state
        if i >= len(c.segments):
            return c.eos, None
        kind = c.segments[i][0]
        what = c.segments[i][1]
        if ((kind == _STRING and detail and self.value_tokens >= c.grammar.max_string_tokens)
                or (kind == _CHOICE and detail in what.choices
                    and not any(x != detail and x.startswith(detail) for x in what.choices))
                or (kind == _INTEGER and detail >= c.grammar.max_digits)):
            # the value can only end here (a string at its cap, a whole choice, the last digit):
            # the layout that follows, closing quote included, is written as forced tokens
            self.state, self.value_tokens = _enter(c.segments, i + 1), 0
            kind = _LAYOUT
        if kind == _LAYOUT:
            return c.layout_token(self.state), None
        allowed = c.candidates(self.state)
        if len(allowed) == 1:
            return int(allowed[0]), None
        return None, allowed

    def advance(self, token: int) -> None:
        """Take the released ``token`` (one the last :meth:`step` allowed)."""
        c = self.compiled
        before = self.state[0]
        after = c.feed_text(self.state, c.pieces[int(token)])
        if after is None:
            raise ParameterError("token", int(token), "is not allowed by the grammar here")
        self.state = after
        self.value_tokens = self.value_tokens + 1 if after[0] == before else 0

    @property
    def done(self) -> bool:
        return self.state[0] >= len(self.compiled.segments)


_COMPILED: dict = {}


def compile_grammar(grammar: JsonGrammar, lm) -> CompiledGrammar:
    """``grammar`` bound to ``lm``'s tokenizer, compiled once per process and model."""
    if not isinstance(grammar, JsonGrammar):
        raise ParameterError("grammar", grammar, "must be a JsonGrammar")
    key = (id(lm.tokenizer), grammar)
    if key not in _COMPILED:
        _COMPILED[key] = (lm.tokenizer, CompiledGrammar(grammar, lm.tokenizer, lm.eos_token_ids[0]))
    return _COMPILED[key][1]
