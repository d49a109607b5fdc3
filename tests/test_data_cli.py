"""``dpkit data`` sub-commands, run in-process through dpkit.cli.main."""

import json

from dpkit import cli


def _main(argv):
    return cli.main(argv)


def test_describe_json(capsys):
    assert _main(["data", "describe", "medical", "--n-classes", "3", "--max-per-class", "10",
                  "--show", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "medical" and len(out["label_names"]) == 3
    assert out["train"] == {k: 8 for k in out["label_names"]}
    assert out["test"] == {k: 2 for k in out["label_names"]}
    assert len(out["examples"]) == 2


def test_describe_text_and_bad_argument(capsys):
    assert _main(["data", "describe", "rotten_tomatoes", "--max-per-class", "10"]) == 0
    assert "negative" in capsys.readouterr().out
    assert _main(["data", "describe", "medical", "--n-classes", "99"]) == 2
    assert "--n-classes" in capsys.readouterr().err
    assert _main(["data", "describe", "imdb"]) == 2


def test_vocabulary_and_provenance(capsys):
    assert _main(["data", "vocabulary", "english", "--n", "50", "--show", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"which": "english", "size": 50, "head": ["the", "to", "and"]}
    assert _main(["data", "provenance", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} >= {"medical", "news", "lm"}
