"""reliability-4 V8: pp ``min_new_tokens`` above ``max_new_tokens`` was accepted without a word.

It is allowed on purpose (``--smoke`` decodes 6 tokens under the default floor of 8): ``min_new_tokens`` is a
floor on where a text may end, not a length. The finding was that nothing said so; the voice module states it
now, and this test checks the statement and the behaviour it describes: below the floor the end tokens are
blocked at every step, so a text under a floor above ``max_new_tokens`` never ends early.
"""

from __future__ import annotations

import dpkit.models.voice as voice
from dpkit.methods import pp
from dpkit.models.voice import DecodingRules

END = 0
VOCAB = 10


def _rules(floor: int) -> DecodingRules:
    return DecodingRules(lambda text: [ord(c) % VOCAB for c in text], lambda ids: "".join(chr(65 + i) for i in ids),
                         VOCAB, [END], min_new_tokens=floor)


def test_v8_the_floor_above_max_new_tokens_is_stated():
    doc = " ".join(voice.__doc__.split())
    assert "a ``max_new_tokens`` below it is allowed" in doc and "every text then runs to ``max_new_tokens``" in doc
    smoke = pp.Config.smoke(4.0)
    assert smoke.min_new_tokens > smoke.max_new_tokens           # the case the statement names: accepted


def test_v8_below_the_floor_no_text_can_end():
    rules, max_new_tokens = _rules(8), 6
    released: list[int] = []
    for _ in range(max_new_tokens):                              # every step a text of 6 tokens can take
        assert END in rules.blocked(released)
        released.append(3)
    assert END not in _rules(6).blocked(released)                # at the floor the end token is allowed again
