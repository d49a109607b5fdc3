"""The record grammar: what it accepts, that any walk through its candidates ends in a valid record,
that its decisions depend on released tokens only, and decoding under it on the real model."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpkit.privpred import DecodeSettings, decode_batch, json_template
from dpkit.privpred.grammar import JsonField, JsonGrammar, compile_grammar
from dpkit.privpred.jsonrecords import REVIEW_EXAMPLE, REVIEW_SCHEMA, parse_record
from dpkit.validate import ParameterError

GRAMMAR = REVIEW_SCHEMA.grammar()
PREFIX = '{\n  "sentiment": "'


def _accepts(grammar: JsonGrammar, text: str) -> bool:
    from dpkit.privpred.grammar import _feed, _start

    segments, state = grammar.segments(), _start(grammar.segments())
    for ch in text:
        state = _feed(segments, state, ch, grammar.max_digits)
        if state is None:
            return False
    return state[0] == len(segments)


_review = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters='"\\'),
                  min_size=1, max_size=40).filter(lambda s: not s[0].isspace())


@settings(max_examples=200, deadline=None)
@given(review=_review, sentiment=st.sampled_from(["negative", "positive"]), words=st.integers(1, 9999))
def test_every_valid_record_is_accepted(review, sentiment, words):
    record = {"sentiment": sentiment, "review": review, "words": words}
    assert _accepts(GRAMMAR, json.dumps(record, indent=2, ensure_ascii=False))
    assert REVIEW_SCHEMA.validate(record) == []


@pytest.mark.parametrize("record", [
    {"sentiment": "great", "review": "x", "words": 1},
    {"sentiment": "positive", "review": "", "words": 1},
    {"sentiment": "positive", "review": "a\nb", "words": 2},
    {"sentiment": "positive", "review": 'say "hi"', "words": 2},
    {"sentiment": "positive", "review": "x", "words": 0},
    {"sentiment": "positive", "review": "x", "words": 12345},
    {"sentiment": "positive", "review": "x", "words": 1, "extra": 1},
    {"review": "x", "sentiment": "positive", "words": 1},
])
def test_records_outside_the_schema_or_the_caps_are_refused(record):
    assert not _accepts(GRAMMAR, json.dumps(record, indent=2))


def test_bad_grammars_are_refused_by_name():
    for make, name in [(lambda: JsonField("a", "float"), "kind"),
                       (lambda: JsonField("a", "choice"), "choices"),
                       (lambda: JsonField('a"', "string"), "name"),
                       (lambda: JsonGrammar((JsonField("a", "string"),), prefix="["), "prefix"),
                       (lambda: JsonGrammar((JsonField("a", "string"),) * 2), "fields"),
                       (lambda: JsonGrammar((JsonField("a", "string"),), max_string_tokens=0), "max_string_tokens")]:
        with pytest.raises(ParameterError) as err:
            make()
        assert err.value.name == name
    from dpkit.privpred.jsonrecords import RecordSchema

    with pytest.raises(ParameterError, match="str and int"):
        RecordSchema(fields={"x": float}).grammar()
    with pytest.raises(ParameterError) as err:
        DecodeSettings(expected_batch_size=2, clip=1, temperature=1, max_private_tokens=1, grammar="{}")
    assert err.value.name == "grammar"


# ------------------------------------------------------------- real tokenizer
@pytest.fixture(scope="module")
def lm():
    from dpkit.models import load_lm

    return load_lm()


def test_any_walk_through_the_candidates_ends_in_a_valid_record(lm):
    """The grammar's promise does not depend on the model: uniform choices also give valid records."""
    grammar = REVIEW_SCHEMA.grammar(prefix=PREFIX, max_string_tokens=12)
    compiled = compile_grammar(grammar, lm)
    rng = np.random.default_rng(0)
    for _ in range(25):
        where, ids = compiled.start(), []
        while True:
            forced, within = where.step()
            token = forced if forced is not None else int(within[rng.integers(len(within))])
            if token in lm.eos_token_ids:
                break
            where.advance(token)
            ids.append(token)
            assert len(ids) < compiled.longest_record()
        record = parse_record(PREFIX + lm.tokenizer.decode(ids))
        assert record is not None and REVIEW_SCHEMA.validate(record) == [], lm.tokenizer.decode(ids)


def test_layout_steps_are_forced_and_values_are_not(lm):
    compiled = compile_grammar(REVIEW_SCHEMA.grammar(prefix=PREFIX), lm)
    where = compiled.start()
    forced, within = where.step()
    assert forced is None and {compiled.pieces[int(i)] for i in within} >= {"positive", "negative"}
    assert all(any(c.startswith(compiled.pieces[int(i)]) for c in ("positive", "negative")) for i in within)
    where.advance(lm.tokenizer("positive", add_special_tokens=False)["input_ids"][0])
    text = ""
    while True:  # the layout up to the review is written token by token, each forced
        forced, within = where.step()
        if forced is None:
            break
        text += compiled.pieces[forced]
        where.advance(forced)
    assert text == '",\n  "review": "'  # a whole choice ends the value: the closing quote is layout
    layout = '",\n  "words": '
    for piece in (compiled.pieces[int(i)] for i in within):  # a quote only closes the review, into the layout
        assert '"' not in piece or (piece.index('"') > 0 and layout.startswith(piece[piece.index('"'):]))


def test_a_too_small_max_new_tokens_is_refused_before_decoding(lm):
    template = json_template(REVIEW_SCHEMA.describe(), first_field="sentiment", example_record=REVIEW_EXAMPLE)
    grammar = REVIEW_SCHEMA.grammar(prefix=template.output_prefix)
    settings_ = DecodeSettings(expected_batch_size=2, clip=2, temperature=1, max_private_tokens=2,
                               max_new_tokens=20, grammar=grammar)
    with pytest.raises(ParameterError) as err:
        decode_batch(lm, [], template.render(lm, template.public_message()), settings_, np.random.default_rng(0))
    assert err.value.name == "max_new_tokens"


@pytest.mark.parametrize("svt", [False, True])
def test_decoding_under_the_grammar_gives_valid_records_and_public_decisions(lm, svt):
    template = json_template(REVIEW_SCHEMA.describe(), first_field="sentiment", example_record=REVIEW_EXAMPLE)
    grammar = REVIEW_SCHEMA.grammar(prefix=template.output_prefix, max_string_tokens=10)
    records = [json.dumps({"sentiment": "negative", "review": t, "words": len(t.split())}, indent=2)
               for t in ("Dull and far too long.", "A tired plot with no surprises.")]
    private = [template.render(lm, template.private_message(r)) for r in records]
    settings_ = DecodeSettings(expected_batch_size=2, clip=2, temperature=1, max_private_tokens=3,
                               svt_threshold=1.0 if svt else None, svt_sigma=1.0 if svt else None, top_k=10,
                               max_new_tokens=40, max_steps=90, grammar=grammar)
    result = decode_batch(lm, private, template.render(lm, template.public_message()), settings_,
                          np.random.default_rng(3))
    assert result.examples and result.private_tokens <= 3 and result.forced_tokens > 0
    compiled = compile_grammar(grammar, lm)
    for ex in result.examples:  # no record is cut: the cap r ends private tokens, not the record
        assert ex.complete
        record = parse_record(template.finish(ex.text))
        assert record is not None and REVIEW_SCHEMA.validate(record) == []
        # replaying the released tokens alone gives the same forced steps: a public decision
        where = compiled.start()
        for token, was_private in zip(ex.token_ids, ex.private):
            forced, _ = where.step()
            if forced is not None:
                assert forced == token and not was_private
            where.advance(token)
        assert where.step()[0] in lm.eos_token_ids
    if not svt:
        assert result.private_tokens == 3 and result.stopped_by == "private-token cap r"


def test_the_public_prompt_alone_writes_valid_records_under_the_grammar(lm):
    template = json_template(REVIEW_SCHEMA.describe(), first_field="sentiment", example_record=REVIEW_EXAMPLE)
    grammar = REVIEW_SCHEMA.grammar(prefix=template.output_prefix, max_string_tokens=10)
    public = template.render(lm, template.public_message())
    settings_ = DecodeSettings(expected_batch_size=2, clip=2, temperature=1, max_private_tokens=1, max_new_tokens=40,
                               max_examples=2, top_k=10, grammar=grammar)
    result = decode_batch(lm, [], public, settings_, np.random.default_rng(0), public_only=True)
    assert len(result.examples) == 2 and result.private_tokens == 0 and result.stopped_by == "max_examples"
    assert all(REVIEW_SCHEMA.validate(parse_record(template.finish(e.text))) == [] for e in result.examples)
    with pytest.raises(ParameterError) as err:
        decode_batch(lm, ["a private prompt"], public, settings_, np.random.default_rng(0), public_only=True)
    assert err.value.name == "public_only"
