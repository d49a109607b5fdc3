"""JSON records: schema description, parsing, validation."""

import pytest

from dpkit.privpred.jsonrecords import REVIEW_SCHEMA, parse_record, review_records
from dpkit.validate import ParameterError


def test_records_round_trip_and_validate():
    recs = review_records(["A fine film.", "Dull."], [1, 0], ["negative", "positive"])
    parsed = [parse_record("```json\n" + r + "\n```\nmore text {") for r in recs]
    assert parsed[0] == {"sentiment": "positive", "review": "A fine film.", "words": 3}
    assert all(REVIEW_SCHEMA.validate(p) == [] for p in parsed)


@pytest.mark.parametrize("record, problem", [
    ({"sentiment": "positive", "review": "x", "words": 1, "extra": 1}, "extra field"),
    ({"sentiment": "positive", "review": "x"}, "missing field"),
    ({"sentiment": "great", "review": "x", "words": 1}, "not an allowed value"),
    ({"sentiment": "positive", "review": "x", "words": "1"}, "not an int"),
    ({"sentiment": "positive", "review": "x", "words": True}, "not an int"),
    ({"sentiment": "positive", "review": "a\nb", "words": 2}, "one line"),
    ({"sentiment": "positive", "review": "x", "words": 0}, "positive count"),
])
def test_each_violation_is_reported(record, problem):
    errors = REVIEW_SCHEMA.validate(record)
    assert errors and any(problem in e for e in errors)


def test_parse_failures_and_schema_text():
    assert parse_record("no json here") is None
    assert parse_record('{"a": 1') is None
    assert parse_record('{"a": "}"}') == {"a": "}"}
    assert parse_record("{'a': 1}") is None
    assert REVIEW_SCHEMA.validate([1]) == ["not a JSON object"]
    text = REVIEW_SCHEMA.describe()
    assert '"sentiment": "str"' in text and "negative, positive" in text
    with pytest.raises(ParameterError):
        parse_record(3)
    with pytest.raises(ParameterError):
        review_records(["a"], [0, 1], ["n", "p"])


def test_json_template_can_open_the_first_field():
    from dpkit.privpred import json_template

    t = json_template(REVIEW_SCHEMA.describe(), first_field="sentiment")
    assert t.answer_prefix.endswith('{\n  "sentiment": "')
    assert parse_record(t.finish('positive", "review": "Fine.", "words": 1}')) == {
        "sentiment": "positive", "review": "Fine.", "words": 1}
    with pytest.raises(ParameterError):
        json_template(REVIEW_SCHEMA.describe(), first_field='a"b')
    with pytest.raises(ParameterError):
        json_template("  ")


def test_json_template_public_prompt_can_show_an_example_record():
    import json

    from dpkit.privpred import json_template
    from dpkit.privpred.jsonrecords import REVIEW_EXAMPLE

    assert REVIEW_SCHEMA.validate(json.loads(REVIEW_EXAMPLE)) == []
    t = json_template(REVIEW_SCHEMA.describe(), first_field="sentiment", example_record=REVIEW_EXAMPLE)
    public = t.public_message()
    assert REVIEW_EXAMPLE in public and '"str"' not in public
    assert public == t.private_message(REVIEW_EXAMPLE)  # same words as a private prompt
    with pytest.raises(ParameterError, match="example_record"):
        json_template(REVIEW_SCHEMA.describe(), example_record="not json")


def test_structure_is_a_standard_json_schema():
    from jsonschema import Draft202012Validator

    schema = REVIEW_SCHEMA.json_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False and set(schema["required"]) == set(REVIEW_SCHEMA.fields)
    assert schema["properties"]["sentiment"]["enum"] == ["negative", "positive"]
