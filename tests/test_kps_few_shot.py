"""DP-KPS few-shot from privatized seeds: later prompts hold earlier synthetic texts, never a record."""

import pytest

from dpkit.kps.prompts import kps_prompt, synthetic_example
from dpkit.methods import Records, kps
from dpkit.privacy.marks import Privatized, Public, is_sealed
from dpkit.seeds import root_sequence
from dpkit.validate import ParameterError

# each record carries a marker that is in no public vocabulary: it may never reach a prompt
RECORDS = Records.from_strings(
    [f"zqx{i} the film was wonderful, moving and funny" for i in range(6)]
    + [f"zqx{i + 6} the film was dull, slow and boring" for i in range(6)],
    ["pos"] * 6 + ["neg"] * 6, ("pos", "neg"))


class RecordingBackend:
    """Stands in for an LLM: records every prompt, answers with a text naming its call and position."""

    def __init__(self):
        self.prompts, self.calls = [], 0

    def generate_batch(self, prompts, **generation):
        self.calls += 1
        out = []
        for p in prompts:
            self.prompts.append(p)
            out.append(f"synthetic-{len(self.prompts)} is a short note on a film")
        return out


def _release(few_shot):
    backend = RecordingBackend()
    config = kps.Config.smoke(4.0, n_per_class=3, few_shot=few_shot)
    release = kps.synthesize(RECORDS, config, None, backend, root_sequence(0))
    return release, backend


def test_later_prompts_show_earlier_synthetic_texts_of_their_label_only():
    release, backend = _release(few_shot=1)
    assert len(release.texts()) == 6 and release.labels() == ["pos"] * 3 + ["neg"] * 3
    first, later = backend.prompts[:2], backend.prompts[2:]  # round 1: one text per label
    assert len(later) == 4
    by_label = {"pos": release.texts()[0], "neg": release.texts()[3]}
    for i, prompt in enumerate(later):
        own, other = ("pos", "neg") if i < 2 else ("neg", "pos")
        assert f"- {by_label[own]}" in prompt and by_label[other] not in prompt
    for prompt in first:
        assert "synthetic-" not in prompt


def test_every_prompt_is_privatized_and_holds_no_record():
    for few_shot in (0, 2):
        release, backend = _release(few_shot)
        for prompt in backend.prompts:
            assert is_sealed(prompt) and isinstance(prompt, Privatized)
            assert "zqx" not in prompt and "pos" not in prompt.split() and "neg" not in prompt.split()
            # provenance: only the ledger entries of DP-KPS's releases
            assert {entry["source"] for entry in prompt.provenance} == {"dpkit.kps"}


def test_few_shot_costs_no_privacy():
    with_examples, _ = _release(few_shot=2)
    without, _ = _release(few_shot=0)
    assert with_examples.ledger.pure_epsilon() == without.ledger.pure_epsilon() == pytest.approx(4.0)
    assert [e["label"] for e in with_examples.ledger.entries] == [e["label"] for e in without.ledger.entries]


def test_synthetic_example_takes_only_the_loops_privatized_completion():
    from dpkit.runs import generate_records

    with pytest.raises(ParameterError, match="prompt"):
        synthetic_example(Public("Write a review."), "a review")
    _, backend = _release(few_shot=0)
    prompt = backend.prompts[0]
    for not_a_completion in (Public("a review"), "Jane Doe SSN 123-45-6789 HIV+"):   # finding F3
        with pytest.raises(ParameterError, match="completion"):
            synthetic_example(prompt, not_a_completion)

    class Echo:
        def generate_batch(self, prompts, **generation):
            return ["a  long\nreview " * 50 for _ in prompts]

    completion = generate_records(None, Echo(), {"k": prompt})["k"]["text"]
    assert isinstance(completion, Privatized) and completion.provenance == prompt.provenance
    example = synthetic_example(prompt, completion, max_chars=20)
    assert isinstance(example, Privatized) and len(example) == 20 and example.provenance == prompt.provenance
    with pytest.raises(ParameterError, match="examples"):
        kps_prompt([prompt], Public("review"), examples=["a plain str"])


def test_bad_few_shot_is_refused():
    with pytest.raises(ParameterError) as info:
        kps.Config(epsilon=4.0, few_shot=-1)
    assert info.value.name == "few_shot"


class TalkingFirstBackend(RecordingBackend):
    """Answers the first call with assistant talk, every later call with a document."""

    def generate_batch(self, prompts, **generation):
        self.calls += 1
        self.prompts.extend(prompts)
        if self.calls == 1:
            return ["I'm sorry, but I can't help with that request." for _ in prompts]
        return [f"redrawn-{self.calls} a quiet film about two brothers" for _ in prompts]


@pytest.mark.parametrize("rounds", [0, 2])
def test_a_text_that_fails_the_public_rule_is_drawn_again_from_its_own_prompt(rounds):
    backend = TalkingFirstBackend()
    config = kps.Config.smoke(4.0, n_per_class=2, redraw=rounds)
    release = kps.synthesize(RECORDS, config, None, backend, root_sequence(0))
    first, redrawn = backend.prompts[:4], backend.prompts[4:]
    if rounds == 0:
        assert redrawn == [] and all(t.startswith("I'm sorry") for t in release.texts())
        assert "failed_text" not in release.public_rules
    else:
        assert [str(p) for p in redrawn] == [str(p) for p in first]  # each text's own prompt, once
        assert all(t.startswith("redrawn-2 ") for t in release.texts())
        assert "failed_text" in release.public_rules
        for prompt in redrawn:
            assert is_sealed(prompt) and isinstance(prompt, Privatized) and "zqx" not in prompt
    assert release.epsilon == pytest.approx(4.0)  # the redraw is post-processing: nothing more is charged
