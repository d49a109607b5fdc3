"""Public label descriptions: ``--labels`` as a JSON object of names to descriptions.

A bare label name is a poor instruction ("ham" became the content of private prediction's texts:
"I'm a little bit confused about the ham."). The data owner may describe each label in public
words; every method's prompts then use the description in place of the name
(:attr:`dpkit.methods.base.Records.prompt_labels`), ``config.json`` records the descriptions and
the privacy report says they are public parameters. Checked here with fake backends: the
description reaches each prompt of DP-KPS, private prediction and DP-ST, a remote backend's
guard still accepts the prompts (they are marked) and no private text reaches it, and bad input
exits 2 with a message naming ``--labels``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from dpkit.backends.base import Backend
from dpkit.cli import main
from dpkit.data.tables import parse_label_descriptions, parse_labels
from dpkit.methods.base import Records
from dpkit.privacy.marks import Privatized, Public
from dpkit.validate import ParameterError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "own_data_sample.csv"
DESCRIPTIONS = {"billing": "a complaint about a charge on a customer's bill",
                "delivery": "a complaint about a late or damaged parcel",
                "product": "a complaint about a faulty product"}
LABELS = json.dumps(DESCRIPTIONS)


class _Recorder(Backend):
    """A fake backend that records every chat it is sent; ``remote`` decides whether the marks guard applies."""

    name = "rec"

    def __init__(self, remote: bool = False):
        super().__init__("rec-model")
        self.remote = remote
        self.chats = []

    def _generate(self, chats, params):
        self.chats += chats
        return ["A short complaint about an order that went wrong." for _ in chats]

    def describe(self):
        return {"backend": "rec", "model": "rec-model"}


def _prompts(backend) -> list[str]:
    return [" ".join(str(m["content"]) for m in chat) for chat in backend.chats]


def _synth(method, out, *extra, labels=LABELS):
    return main(["synth", method, "--input", str(SAMPLE), "--text-column", "text", "--label-column", "label",
                 "--labels", labels, "--epsilon", "8", "--smoke", "--seed", "1", "--out", str(out), *extra])


def _release_files(out: Path):
    config = json.loads(next(out.rglob("release/config.json")).read_text())
    report = next(out.rglob("release/privacy_report.md")).read_text()
    records = [json.loads(line) for line in next(out.rglob("release/synthetic.jsonl")).read_text().splitlines()]
    return config, report, records


def _check_release(out: Path):
    config, report, records = _release_files(out)
    assert config["label_descriptions"] == DESCRIPTIONS and config["labels"] == ["billing", "delivery", "product"]
    assert "public parameter" in report and "description" in report
    assert {r["label"] for r in records} <= set(DESCRIPTIONS)  # the released records carry the names


# ------------------------------------------------------------------ parsing and validation
def test_a_json_object_declares_the_names_and_their_descriptions():
    assert parse_labels(LABELS) == ("billing", "delivery", "product")
    assert parse_label_descriptions(LABELS) == DESCRIPTIONS
    assert parse_label_descriptions('{"ham": "  a personal\\tmessage  "}') == {"ham": "a personal message"}
    assert parse_label_descriptions("ham,spam") is None and parse_label_descriptions('["a,b", "c"]') is None
    assert parse_labels("ham,spam") == ("ham", "spam")  # the other forms are unchanged


@pytest.mark.parametrize("bad, needle", [
    ('{"ham": 3}', "non-empty string"),
    ('{"ham": "  "}', "non-empty string"),
    ("{}", "at least one label"),
    ('{"ham": "x"', "not valid JSON"),
    ('{"ham": "x", " ": "y"}', "non-empty"),
    ('{"ham": "' + "x" * 201 + '"}', "at most 200 characters"),
])
def test_bad_descriptions_name_the_parameter_the_value_and_what_is_allowed(bad, needle):
    with pytest.raises(ParameterError) as info:
        parse_labels(bad)
    assert info.value.name == "--labels" and needle in str(info.value)


def test_bad_descriptions_exit_2_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "run"
    assert _synth("kps", out, labels='{"billing": 3, "delivery": "a parcel", "product": "a product"}') == 2
    err = capsys.readouterr().err
    assert "--labels" in err and "description" in err and "Traceback" not in err and not out.exists()


def test_records_use_the_description_in_place_of_the_name():
    records = Records.from_strings(["a", "b"], ["spam", "ham"], ("ham", "spam"),
                                   descriptions={"ham": "a message between friends", "spam": "an advertisement"})
    assert records.prompt_labels == ("a message between friends", "an advertisement")
    assert records.capped(1).prompt_labels == records.prompt_labels
    plain = Records.from_strings(["a"], ["ham"], ("ham", "spam"))
    assert plain.prompt_labels == ("ham", "spam") and Records(("a",)).prompt_labels is None
    with pytest.raises(ParameterError, match="label_descriptions"):
        Records(("a",), (0,), ("ham", "spam"), True, ("only one",))


# ------------------------------------------------------------------ the description reaches every method's prompts
def test_dp_kps_names_the_description_and_no_bare_name(tmp_path, monkeypatch):
    import dpkit.backends

    backend = _Recorder()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    assert _synth("kps", tmp_path / "run") == 0
    prompts = _prompts(backend)
    assert prompts and all(any(d in p for d in DESCRIPTIONS.values()) for p in prompts)
    assert all(sum(d in p for d in DESCRIPTIONS.values()) == 1 for p in prompts)  # one label's, not all of them
    _check_release(tmp_path / "run")


def test_dp_kps_without_descriptions_still_names_no_class(tmp_path, monkeypatch):
    import dpkit.backends

    backend = _Recorder()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    assert _synth("kps", tmp_path / "run", labels="billing,delivery,product") == 0
    assert backend.chats and not any(d in p for p in _prompts(backend) for d in DESCRIPTIONS.values())
    config, _, _ = _release_files(tmp_path / "run")
    assert "label_descriptions" not in config


def test_private_prediction_prompts_carry_the_description(tmp_path, monkeypatch):
    import dpkit.methods.pp as pp
    from dpkit.privpred.pipeline import _label_name

    seen = {}

    def fake_generate(texts, template, config, *, labels, label_names, n_batches, **kwargs):
        seen.update(template=template, label_names=label_names)
        return SimpleNamespace(examples=[SimpleNamespace(text="My order went wrong again today.", label=k)
                                         for k in range(len(label_names))])

    checked = []
    monkeypatch.setattr(pp, "resolve_local_lm", lambda backend: None)
    monkeypatch.setattr(pp, "fitting_public_prompts", lambda lm, template, config, names: checked.append(names))
    monkeypatch.setattr(pp, "generate_synthetic", fake_generate)
    assert _synth("pp", tmp_path / "run") == 0
    assert checked and all(tuple(names) == tuple(DESCRIPTIONS.values()) for names in checked)  # sizes: as run
    assert tuple(seen["label_names"]) == tuple(DESCRIPTIONS.values())
    template = seen["template"]
    for k, description in enumerate(DESCRIPTIONS.values()):
        shown = _label_name(seen["label_names"], k)
        for message in (template.private_message("An example.", shown), template.public_message(shown)):
            name = list(DESCRIPTIONS)[k]
            assert description.lower() in message.lower() and f"Label: {name.capitalize()}." not in message
    _check_release(tmp_path / "run")


def test_dp_st_rewrite_is_told_the_description(tmp_path, monkeypatch):
    import dpkit.backends

    backend = _Recorder()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    assert _synth("dpst", tmp_path / "run", "--set", "n_articles=12", "--set", "name_label=true") == 0
    prompts = _prompts(backend)
    assert prompts and all(sum(d in p for d in DESCRIPTIONS.values()) == 1 for p in prompts)
    _check_release(tmp_path / "run")


# ------------------------------------------------------------------ the API guard still holds
@pytest.mark.parametrize("method, extra", [("kps", ()), ("dpst", ("--set", "n_articles=12", "--set", "name_label=true"))])
def test_a_remote_backend_accepts_the_described_prompts_and_sees_no_record(method, extra, tmp_path, monkeypatch):
    import dpkit.backends

    backend = _Recorder(remote=True)
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    assert _synth(method, tmp_path / "run", *extra) == 0
    prompts = _prompts(backend)
    rows = [row["text"] for row in csv.DictReader(open(SAMPLE, encoding="utf-8"))]
    assert prompts and any(d in p for p in prompts for d in DESCRIPTIONS.values())
    assert not any(row in p for p in prompts for row in rows)


def test_a_description_must_be_marked_public_in_a_dp_kps_prompt():
    from dpkit.kps.prompts import kps_prompt
    from dpkit.privacy import Laplace, PrivacyLedger
    from dpkit.privacy.marks import release_texts

    entry = PrivacyLedger().spend(Laplace(1.0, epsilon=1.0).contract, "test release")
    terms = release_texts(["parcel", "late"], entry)
    prompt = kps_prompt(terms, Public("complaint"), description=Public("a complaint about a late parcel"))
    assert isinstance(prompt, Privatized) and "(a complaint about a late parcel)" in prompt
    with pytest.raises(ParameterError, match="never marks a caller's str"):
        kps_prompt(terms, Public("complaint"), description="a plain string")
