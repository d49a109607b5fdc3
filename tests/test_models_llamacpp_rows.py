"""Private prediction's invariants on the llama.cpp logits source (dpkit.models.llamacpp_rows).

* the public row does not depend on the private rows;
* each private row is a function of its own prompt and the released tokens;
* restarting and replaying the released tokens gives the same logits.
Skipped (with the reason) only where llama-cpp-python is not importable.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpkit.models import llamacpp
from dpkit.validate import ParameterError

pytestmark = pytest.mark.skipif(not llamacpp.available(),
                                reason="llama-cpp-python is not installed (make setup installs it)")

PRIVATE = ["Here is a review: \"The soup was cold.\" Write a similar review.",
           "Here is a review: \"Lovely staff, tiny room, loud street at night.\" Write a similar review.",
           "Here is a review: \"Great battery.\" Write a similar review."]
OTHERS = ["Here is a review: \"A long, slow film with a wonderful score and a weak ending.\" Write a similar review.",
          "Here is a review: \"No.\" Write a similar review."]
PUBLIC = "Write a customer review."
RELEASED = [504, 2102, 314, 253, 1345, 30]   # arbitrary released token ids


@pytest.fixture(scope="module")
def lm():
    return llamacpp.load_llamacpp()


def _ids(lm, texts):
    return [lm.tokenize(lm.chat(t)) for t in texts]


def _trace(group, tokens):
    """Logits at the prompt and after each released token (numpy copies)."""
    out = [np.array(group.logits_array)]
    for token in tokens:
        group.advance(token)
        out.append(np.array(group.logits_array))
    return np.stack(out)


def test_public_row_does_not_depend_on_the_private_rows(lm):
    from dpkit.models.llamacpp_rows import LlamaCppGroup

    alone = _trace(LlamaCppGroup(lm, _ids(lm, [PUBLIC]), 16, torch=False), RELEASED)
    for private in (PRIVATE, OTHERS, PRIVATE[:1]):
        rows = LlamaCppGroup(lm, _ids(lm, private), 16, torch=False)
        public = LlamaCppGroup(lm, _ids(lm, [PUBLIC]), 16, torch=False)
        traces = []
        for token in RELEASED:
            rows.advance(token)
            public.advance(token)
            traces.append(np.array(public.logits_array))
        assert np.array_equal(np.stack(traces), alone[1:])
        assert np.array_equal(public.prompt_logits_array, alone[0])


def test_each_private_row_depends_only_on_its_own_prompt_and_the_released_tokens(lm):
    from dpkit.models.llamacpp_rows import LlamaCppGroup

    first = _trace(LlamaCppGroup(lm, _ids(lm, PRIVATE), 16, torch=False), RELEASED)
    swapped = _trace(LlamaCppGroup(lm, _ids(lm, [PRIVATE[0]] + OTHERS), 16, torch=False), RELEASED)
    assert np.array_equal(first[:, 0], swapped[:, 0])                 # row 0: same prompt, other neighbours
    assert not np.array_equal(first[:, 1], swapped[:, 1])             # the logits do read the prompts
    reordered = _trace(LlamaCppGroup(lm, _ids(lm, [PRIVATE[2], PRIVATE[0], PRIVATE[1]]), 16, torch=False), RELEASED)
    assert np.array_equal(first[:, 0], reordered[:, 1])               # its place in the batch does not matter


def test_restart_and_replay_give_the_same_logits(lm):
    from dpkit.models.llamacpp_rows import LlamaCppGroup

    group = LlamaCppGroup(lm, _ids(lm, PRIVATE), 16, torch=False)
    first = _trace(group, RELEASED)
    group.restart()
    assert group.released == 0 and group.passes == 1 + len(RELEASED)
    again = _trace(group, RELEASED)
    fresh = _trace(LlamaCppGroup(lm, _ids(lm, PRIVATE), 16, torch=False), RELEASED)
    assert np.array_equal(first, again) and np.array_equal(first, fresh)
    group.close()


def test_torch_view_and_input_checks(lm):
    import torch

    from dpkit.models.llamacpp_rows import LlamaCppGroup

    group = LlamaCppGroup(lm, _ids(lm, PRIVATE[:2]), 4)
    assert isinstance(group.logits, torch.Tensor) and group.logits.shape == (2, lm.vocab_size)
    assert group.logits.dtype == torch.float32
    with pytest.raises(ParameterError, match="ids"):
        LlamaCppGroup(lm, [], 4)
    with pytest.raises(ParameterError, match="max_new_tokens"):
        LlamaCppGroup(lm, _ids(lm, PRIVATE[:1]), lm.context_length)
    from dpkit.models.llamacpp_batch import ContextFullError

    with pytest.raises(ContextFullError):
        for _ in range(300):                                               # room: 4 tokens, rounded up to 256
            group.advance(RELEASED[0])
