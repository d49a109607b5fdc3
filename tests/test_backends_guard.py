"""The privatized-text guard and the marks: sealed, made only by mechanisms, lost on string operations."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.backends import LocalBackend, get_backend, require_sendable
from dpkit.backends.guard import normalize_messages
from dpkit.privacy import Laplace, PrivacyLedger
from dpkit.privacy.marks import (PrivateTextError, Privatized, Public, check_provenance, compose_prompt, is_sealed,
                                 post_process,
                                 release_text, release_texts)
from dpkit.validate import ParameterError

text = st.text(max_size=20)
MECHANISM = Laplace(1.0, epsilon=0.5, unit="document")


def released(value: str, label: str = "dp") -> Privatized:
    """Text marked as the output of a real (ledger-charged) Laplace release."""
    return release_text(value, PrivacyLedger().spend(MECHANISM.contract, label), source=label)


def _send(content):
    return require_sendable([{"role": "user", "content": content}], "openai")


@settings(max_examples=50, deadline=None)
@given(text, text)
def test_concatenation_and_formatting_never_keep_a_mark(a, b):
    for marked in (Public(a), released(a)):
        for combined in (marked + b, b + marked, marked + marked, f"{marked}", "{}".format(marked),
                         marked[:], marked.upper(), " ".join([marked]), marked * 2, str(marked)):
            assert type(combined) is str
            with pytest.raises(PrivateTextError):
                require_sendable([{"role": "user", "content": combined}], "openai")


@settings(max_examples=50, deadline=None)
@given(text, text)
def test_compose_prompt_marks_by_its_most_private_field(a, b):
    public = compose_prompt(Public("{x}|{y}"), x=Public(a), y=Public(b))
    assert type(public) is Public and public == f"{a}|{b}"
    private = compose_prompt(Public("{x}|{y}"), x=Public(a), y=released(b))
    assert type(private) is Privatized and private == f"{a}|{b}"
    assert [p["source"] for p in private.provenance] == ["dp"]


def test_compose_prompt_refuses_unmarked_pieces_and_bad_templates():
    with pytest.raises(PrivateTextError, match="field 'x' is a str"):
        compose_prompt(Public("{x}"), x="raw document")
    with pytest.raises(PrivateTextError, match="field 'n' is a int"):
        compose_prompt(Public("{n}"), n=3)
    with pytest.raises(PrivateTextError, match="template must be Public"):
        compose_prompt("{x}", x=Public("a"))
    with pytest.raises(ParameterError, match="template"):
        compose_prompt(Public("{missing}"), x=Public("a"))


def test_privatized_carries_the_contract_and_the_ledger_entry():
    ledger = PrivacyLedger()
    entry = ledger.spend(MECHANISM.contract, "counts")
    value = release_text("12.3", entry)
    (prov,) = value.provenance
    assert prov["source"] == "Laplace" and prov["contract"]["epsilon"] == 0.5
    assert prov["ledger_entry"]["label"] == "counts" and prov["ledger_entry"]["contract"] == prov["contract"]
    assert _send(value) == [prov]
    with pytest.raises(ParameterError, match="already Privatized"):
        Public(value)
    joined = Public(", ").join_marked([Public("a"), value, released("b", "other")])
    assert joined == "a, 12.3, b" and [p["source"] for p in joined.provenance] == ["Laplace", "other"]
    assert pickle.loads(pickle.dumps(joined)).provenance == joined.provenance
    assert [str(t) for t in release_texts(["x", "y"], entry)] == ["x", "y"]
    from dpkit.dpst.reconstruct import _quote

    assert post_process(value, _quote).provenance == value.provenance
    for caller_function in (str.upper, lambda _: "Jane Doe SSN 123-45-6789", _caller_defined):
        with pytest.raises(PrivateTextError, match="post_process"):   # a caller's function could mark any text
            post_process(value, caller_function)


def _caller_defined(text):
    return "Jane Doe SSN 123-45-6789"


def test_marks_cannot_be_forged():
    """Every way the reliability review made a false mark is refused before anything is sent."""
    private = "Jane Doe SSN 123-45-6789"
    for make in (lambda: Privatized(private, source="made up"), lambda: Privatized(private, sources=[]),
                 lambda: Privatized(private, contract={})):
        with pytest.raises(PrivateTextError, match="made only by a DP mechanism"):
            make()
    for forged in (str.__new__(Public, private), str.__new__(Privatized, private)):
        assert not is_sealed(forged)
        with pytest.raises(PrivateTextError):
            _send(forged)

    class Sneaky(Public):
        pass
    with pytest.raises(PrivateTextError, match="subclassed"):
        Sneaky("harmless")
    value = released("RELEASED-TEXT")
    with pytest.raises(AttributeError, match="immutable"):
        value._provenance = ()
    forged_pickle = pickle.dumps(value).replace(b"RELEASED-TEXT", b"JANE-DOE-HIV!", 1)   # same length
    with pytest.raises(PrivateTextError, match="another process or edited"):
        pickle.loads(forged_pickle)
    with pytest.raises(ParameterError, match="ledger_entry"):
        release_text(private, {"label": "made up"})
    provenance = value.provenance[0]
    with pytest.raises(PrivateTextError, match="another contract"):
        check_provenance({**provenance, "contract": {**provenance["contract"], "epsilon": 0.01}})
    with pytest.raises(PrivateTextError, match="ledger entry"):
        check_provenance({**provenance, "ledger_entry": {}})


def test_remote_backends_refuse_plain_text_and_do_not_echo_it():
    backend = get_backend("anthropic", cache=False)
    secret = "Patient John Doe, HIV positive"
    with pytest.raises(PrivateTextError) as info:
        backend.generate(secret)
    assert secret not in str(info.value) and "John" not in str(info.value)
    chat = [{"role": "user", "content": Public("ok")}, {"role": "assistant", "content": secret}]
    with pytest.raises(PrivateTextError, match="message 1 \\(assistant\\)"):
        backend.generate(chat)


def test_local_backend_accepts_private_text_unless_strict():
    lm = _EchoLM()
    relaxed = LocalBackend(lm=lm)
    assert relaxed.generate("private note", max_new_tokens=3) == "echo:private note"
    strict = LocalBackend(lm=lm, strict=True)
    with pytest.raises(PrivateTextError, match="local \\(strict\\)"):
        strict.generate("private note")
    assert strict.generate(Public("public note")) == "echo:public note"
    assert relaxed.describe()["prompts_unmarked"] == 1


def test_unmarked_local_prompts_are_never_cached(tmp_path):
    lm = _EchoLM()
    backend = LocalBackend(lm=lm, cache=get_backend("local", cache=tmp_path).cache)
    backend.generate_batch(["private", Public("public")])
    backend.generate_batch(["private", Public("public")])
    assert lm.calls == [2, 1]            # only the public prompt came from the cache
    assert len(backend.cache) == 1


def test_message_validation():
    with pytest.raises(ParameterError, match="role"):
        normalize_messages([{"role": "tool", "content": "x"}])
    with pytest.raises(ParameterError, match="prompt"):
        normalize_messages([])
    with pytest.raises(ParameterError, match="name"):
        get_backend("gemini")


class _EchoLM:
    """Stands in for LocalLM in plumbing tests (the real model is tested in test_backends_local)."""

    name = "echo"
    device = "cpu"

    def __init__(self):
        self.calls: list[int] = []

    def generate(self, chats, **kw):
        self.calls.append(len(chats))
        return ["echo:" + chat[-1]["content"] for chat in chats]


def test_backend_and_model_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DPKIT_BACKEND", "anthropic")
    monkeypatch.setenv("DPKIT_MODEL", "claude-test")
    chosen = get_backend(cache=tmp_path)
    assert (chosen.name, chosen.model, chosen.remote) == ("anthropic", "claude-test", True)
    assert chosen.cache.root == tmp_path
    monkeypatch.delenv("DPKIT_BACKEND")
    monkeypatch.delenv("DPKIT_MODEL")
    local = get_backend(cache=False)                       # no model is loaded until first use
    assert (local.name, local.model, local.remote, local.cache) == ("local", "SmolLM2-135M-Instruct", False, None)
    assert get_backend("openai", "gpt-x", cache=False).model == "gpt-x"
    with pytest.raises(ParameterError, match="cache"):
        get_backend("local", cache=3)
