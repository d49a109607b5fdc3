"""Prompts as data: the shapes of Appendix F.2 of {cite}`amin2024private`.

A :class:`PromptTemplate` holds the user message with a ``{label}`` and an
``{example}`` slot, the text that stands in for the example in the PUBLIC
prompt, and the start of the assistant's answer (``"Text:"``). The private
prompt of a record puts the record into ``{example}``; the public prompt of a
label puts ``public_example`` there -- it is built from the label name and the
template alone, never from private data, so it may be decoded freely and its
logits drive the sparse-vector test and the top-k restriction.

Rendering goes through the model's chat template (:meth:`LocalLM.chat`) and
appends ``answer_prefix``, so decoding continues right after ``"Text:"``.
``answer_prefix`` text that is part of the record (``"{"`` of a JSON object) is
also kept in ``output_prefix`` and put back in front of every generated text.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpkit.models.voice import strip_echo, voice_system
from dpkit.validate import ParameterError


@dataclass(frozen=True)
class PromptTemplate:
    """A task's private and public prompt, as data (see the module docstring)."""

    name: str
    user: str
    public_example: str
    answer_prefix: str
    output_prefix: str = ""
    public_user: str | None = None
    system: str | None = None   # public system message of every row (None: the model's own default)
    document_type: str | None = None  # public: set, finish() strips a leading echo of it and of the label

    def _label(self, label: str | None) -> str:
        if "{label}" in self.user and not label:
            raise ParameterError("label", label, f"template {self.name!r} needs a label name")
        return label or ""

    def private_message(self, example: str, label: str | None = None) -> str:
        """The user message of one private prompt (it contains the sensitive example)."""
        if not isinstance(example, str) or not example.strip():
            raise ParameterError("example", example, "must be a non-empty string")
        return self.user.format(label=self._label(label), example=example.strip())

    def public_message(self, label: str | None = None) -> str:
        """The user message of the public prompt (no private data)."""
        template = self.public_user if self.public_user is not None else self.user
        label = self._label(label)
        return template.format(label=label, example=self.public_example.format(label=label))

    def render(self, lm, message: str) -> str:
        """Chat-render a user message for ``lm`` (after the template's system message, if any) and
        open the assistant's answer. The same public frame around every row, private or public."""
        if self.system is None:
            return lm.chat(message) + self.answer_prefix
        return lm.chat(message, system=self.system) + self.answer_prefix

    def finish(self, generated: str, label: str | None = None) -> str:
        """Put ``output_prefix`` back in front of a generated text; with a ``document_type``, also drop a
        leading echo of the instruction ("The medical exam question: ...", "Surgery: ...";
        :func:`dpkit.models.voice.strip_echo`, reading the public document type and ``label`` name).
        Post-processing of the released text, the same rule for every text: no privacy is spent."""
        text = self.output_prefix + generated
        if self.document_type is None:
            return text
        return strip_echo(text, self.document_type, [label] if label else [])


SENTIMENT = PromptTemplate(
    name="sentiment",
    user="Here are texts with Sentiment: {label}.\n\nText: {example}\n\nPlease give me another one.",
    public_example="<text of Sentiment: {label}>",
    answer_prefix="Text:",
)

MEDICAL_QUESTIONS = PromptTemplate(
    name="medical-questions",
    user="Here are questions with Specialty: {label}.\n\nQuestion: {example}\n\nPlease give me another one.",
    public_example="<question of Specialty: {label}>",
    answer_prefix="Question:",
)

NEWS = PromptTemplate(
    name="news",
    user="Here are texts with News Type: {label}.\n\nText: {example}\n\nPlease give me another one.",
    public_example="<text of News Type: {label}>",
    answer_prefix="Text:",
)

JSON_RECORD = PromptTemplate(
    name="json-record",
    user="Here is a JSON record:\n\n{example}\n\nPlease give me another JSON record that complies with "
         "the above schema.",
    public_user="Here is the schema for a JSON record:\nSchema:\n\n{example}\n\nPlease give me another JSON "
                "record that complies with the above schema.",
    public_example="",  # filled with the schema text by :func:`json_template`
    answer_prefix="```json\n{",
    output_prefix="{",
)

TEMPLATES = {t.name: t for t in (SENTIMENT, MEDICAL_QUESTIONS, NEWS, JSON_RECORD)}
DATASET_TEMPLATES = {"rotten_tomatoes": "sentiment", "medical": "medical-questions"}


def json_template(schema_text: str, first_field: str | None = None,
                  example_record: str | None = None) -> PromptTemplate:
    """The JSON task with its public prompt showing ``schema_text`` in place of a record.

    ``first_field``: also open the record with its first field name (``{"sentiment": "``), which
    fixes the record's start for every prompt alike (public text; it is kept in the output).
    ``example_record``: a hand-written, PUBLIC record that complies with the schema. When given,
    the public prompt shows it in place of a private record, in the private prompt's own words
    (a small model copies a schema's type names, "str", but imitates an instance well).
    """
    if not isinstance(schema_text, str) or not schema_text.strip():
        raise ParameterError("schema_text", schema_text, "must be a non-empty schema description")
    if example_record is not None:
        if not isinstance(example_record, str) or not example_record.strip().startswith("{"):
            raise ParameterError("example_record", example_record, "must be the text of a JSON object")
        schema_text, public_user = example_record, None
    else:
        public_user = JSON_RECORD.public_user
    start = JSON_RECORD.output_prefix
    if first_field is not None:
        if not isinstance(first_field, str) or not first_field.strip() or '"' in first_field:
            raise ParameterError("first_field", first_field, "must be a field name without quotes")
        start = '{\n  "' + first_field + '": "'
    return PromptTemplate(JSON_RECORD.name, JSON_RECORD.user, schema_text.replace("{", "{{").replace("}", "}}"),
                          "```json\n" + start, start, public_user)


#: Private prediction's opening of every row's answer: the announcement a small chat model writes
#: anyway ("The medical exam question: ...") is already part of the prompt, and it continues a quoted
#: document. ``{document_type}`` is filled in; the same public text for every row.
PP_PREFILL = 'Here is the {document_type}:\n\n"'


def document_template(document_type: str, labelled: bool = True, *, prefill: str | None = None,
                      strip_echo: bool = True) -> PromptTemplate:
    """The prompt in the data's voice for a user's own texts of ``document_type`` (public text).

    A system message makes the model a writer of such documents (and replaces the chat
    template's default assistant persona); the example is quoted and the answer opens with
    ``prefill`` (default :data:`PP_PREFILL`: ``Here is the {document_type}:``, a blank line and a
    quotation mark), so the model continues a quoted document (:mod:`dpkit.models.voice`; a
    release adds the closing mark and a new line as stop sequences). ``strip_echo``: a released
    text loses a leading echo of the document type or label (:meth:`PromptTemplate.finish`;
    post-processing). The label is named,
    as in the seed paper's prompts (the label set is public). Every private row gets the
    same frame around its own record; the public row asks for a document of the type and
    label without an example (document type and label name only: no private data).
    """
    if not isinstance(document_type, str) or not document_type.strip() or "{" in document_type \
            or "}" in document_type:
        raise ParameterError("document_type", document_type, "must be a non-empty description without braces")
    doc = " ".join(document_type.split())
    answer = PP_PREFILL.format(document_type=doc) if prefill is None else prefill
    if not isinstance(answer, str) or not answer or "{" in answer or "}" in answer:
        raise ParameterError("prefill", prefill, "must be a non-empty text without braces")
    echo = doc if strip_echo else None
    if labelled:
        return PromptTemplate(
            name="document-labelled",
            user=f"Here is a {doc} with Label: {{label}}.\n\n\"{{example}}\"\n\n"
                 f"Write another {doc} with Label: {{label}}.",
            public_example="", answer_prefix=answer, public_user=f"Write a {doc} with Label: {{label}}.",
            system=voice_system(doc), document_type=echo)
    return PromptTemplate(
        name="document", user=f"Here is a {doc}.\n\n\"{{example}}\"\n\nWrite another {doc}.",
        public_example="", answer_prefix=answer, public_user=f"Write a {doc}.", system=voice_system(doc),
        document_type=echo)


def get_template(name: str) -> PromptTemplate:
    """A template by task name (``sentiment``, ``medical-questions``, ``news``, ``json-record``) or dataset name."""
    name = DATASET_TEMPLATES.get(name, name)
    if name not in TEMPLATES:
        raise ParameterError("name", name, f"must be one of {sorted(TEMPLATES) + sorted(DATASET_TEMPLATES)}")
    return TEMPLATES[name]
