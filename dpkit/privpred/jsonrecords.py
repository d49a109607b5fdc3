"""JSON records for the structured-output experiment (the analogue of Table 4 of {cite}`amin2024private`).

:class:`RecordSchema` lists the fields of a record with their types and
allowed values; :meth:`RecordSchema.describe` writes the PUBLIC schema prompt
text (in the shape of the paper's Figure 12); :func:`parse_record` extracts the
first JSON object from a generated text; :meth:`RecordSchema.validate` returns
the list of violations (no extra fields, all fields present, right types,
allowed values, custom checks such as "no line breaks"). The structural part is
a standard JSON Schema (:meth:`RecordSchema.json_schema`) checked by the
``jsonschema`` package; only the custom checks are our own predicates.
:func:`review_records` turns labelled review snippets into such records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Sequence

from jsonschema import Draft202012Validator

from dpkit.privpred.grammar import JsonField, JsonGrammar
from dpkit.validate import ParameterError

_TYPE_NAMES = {str: "str", int: "int", float: "float", bool: "bool", list: "list"}
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array"}


@dataclass(frozen=True)
class RecordSchema:
    """Fields (name -> Python type), allowed values per field, and named custom checks."""

    fields: dict
    choices: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)  # name -> (field, predicate, description)

    def describe(self) -> str:
        lines = ["{"]
        for i, (name, typ) in enumerate(self.fields.items()):
            comma = "," if i < len(self.fields) - 1 else ""
            note = ""
            if name in self.choices:
                note = "  # one of: " + ", ".join(map(str, self.choices[name]))
            for _, (f, _, text) in self.checks.items():
                if f == name:
                    note += ("  # " if not note else "; ") + text
            lines.append(f'  "{name}": "{_TYPE_NAMES.get(typ, typ.__name__)}"{comma}{note}')
        lines.append("}")
        return "\n".join(lines)

    def json_schema(self) -> dict:
        """The fields, their types and allowed values as a JSON Schema (draft 2020-12)."""
        properties = {}
        for name, typ in self.fields.items():
            properties[name] = {"type": _JSON_TYPES[typ]}
            if name in self.choices:
                properties[name]["enum"] = list(self.choices[name])
        return {"type": "object", "properties": properties, "required": list(self.fields),
                "additionalProperties": False}

    def grammar(self, prefix: str = "", max_string_tokens: int = 32, max_digits: int = 4):
        """This schema as a decoding grammar (:mod:`dpkit.privpred.grammar`): strings, choices, integers >= 1.

        ``prefix``: the record's start that the prompt already wrote (a template's ``output_prefix``).
        """
        fields = []
        for name, typ in self.fields.items():
            if typ is str:
                choices = tuple(self.choices.get(name, ()))
                fields.append(JsonField(name, "choice" if choices else "string", choices))
            elif typ is int:
                fields.append(JsonField(name, "integer"))
            else:
                raise ParameterError("fields", {name: typ.__name__}, "a decoding grammar supports str and int "
                                                                   "fields only")
        return JsonGrammar(tuple(fields), prefix, max_string_tokens, max_digits)

    def validate(self, record) -> list[str]:
        """Violations of the schema (empty list: valid): JSON Schema first, then the custom checks."""
        if not isinstance(record, dict):
            return ["not a JSON object"]
        errors = []
        for error in sorted(Draft202012Validator(self.json_schema()).iter_errors(record), key=lambda e: list(e.path)):
            errors.extend(self._describe(error, record))
        for check, (name, predicate, _) in self.checks.items():
            if name in record and not errors and not predicate(record[name]):
                errors.append(f"check {check!r} failed")
        return errors

    def _describe(self, error, record) -> list[str]:
        if error.validator == "additionalProperties":
            return [f"extra field {k!r}" for k in record if k not in self.fields]
        if error.validator == "required":
            return [f"missing field {k!r}" for k in error.validator_value if k not in record]
        name = error.path[0] if error.path else None
        if error.validator == "type" and name in self.fields:
            typ = self.fields[name]
            article = "an" if _TYPE_NAMES.get(typ, "")[:1] in "aeiou" else "a"
            return [f"{name!r} is not {article} {_TYPE_NAMES.get(typ, typ.__name__)}"]
        if error.validator == "enum" and name in self.fields:
            return [f"{name!r}={record[name]!r} is not an allowed value"]
        return [error.message]


def parse_record(text: str):
    """The first complete JSON object in ``text`` (``None`` when there is none or it does not parse)."""
    if not isinstance(text, str):
        raise ParameterError("text", text, "must be a string")
    start = text.find("{")
    if start < 0:
        return None
    depth, in_string, escape = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                try:
                    return json.loads(text[start:i + 1])
                except json.JSONDecodeError:
                    return None
    return None


REVIEW_SCHEMA = RecordSchema(
    fields={"sentiment": str, "review": str, "words": int},
    choices={"sentiment": ("negative", "positive")},
    checks={"one line": ("review", lambda v: bool(v.strip()) and "\n" not in v, "one non-empty line"),
            "positive count": ("words", lambda v: v > 0, "number of words in the review, > 0")},
)


#: A hand-written record (public: it quotes no data set) that complies with :data:`REVIEW_SCHEMA`.
REVIEW_EXAMPLE = json.dumps({"sentiment": "positive", "review": "A warm, funny film with a cast that clearly "
                             "enjoys every scene.", "words": 12}, indent=2)


def review_records(texts: Sequence[str], labels: Sequence[int], label_names: Sequence[str]) -> list[str]:
    """Each labelled review as an indented JSON record matching :data:`REVIEW_SCHEMA`."""
    if len(texts) != len(labels):
        raise ParameterError("labels", f"<{len(labels)} labels>", f"must have one label per text ({len(texts)})")
    return [json.dumps({"sentiment": str(label_names[int(y)]).lower(), "review": t.strip(),
                        "words": len(t.split())}, indent=2) for t, y in zip(texts, labels)]
