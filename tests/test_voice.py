"""The data's voice (dpkit.models.voice): prefill, stop sequences, banned openings, the minimum length,
their plumbing through a backend, and private prediction's invariants under the same rules."""

import numpy as np
import pytest
import torch

from dpkit.backends.base import Backend, GenerationParams
from dpkit.models.voice import (BANNED_OPENINGS, DEFAULT_PREFILL, DecodingRules, OpeningBan, Voice, banned_next,
                                check_no_repeat_ngram, cut_at_stop, document_voice, opening_sequences,
                                repeated_ngram_next, split_prefill, with_voice)
from dpkit.privacy.marks import Public, is_sealed
from dpkit.validate import ParameterError


# ------------------------------------------------------------------ a toy tokenizer: one id per character
def _tok(text):
    return [ord(ch) for ch in text]


def _detok(ids):
    return "".join(chr(i) for i in ids)


def test_document_voice_defaults_and_bad_input():
    v = document_voice("health  news tweet")
    assert v.document_type == "health news tweet" and v.system == "You write health news tweets."
    assert v.prefill == 'Here is the health news tweet:\n\n"' and v.prefill.endswith(DEFAULT_PREFILL)
    assert v.stop == ("\n", '"') and v.banned == BANNED_OPENINGS
    assert document_voice("tweet", prefill='"').prefill == '"' 
    assert "health news tweet" in str(v.to_dict())
    for bad in ("", "  ", None):
        with pytest.raises(ParameterError) as err:
            document_voice(bad)
        assert err.value.name == "document_type"
    with pytest.raises(ParameterError):
        Voice("tweet", stop="\n")            # a string is not a list of stop sequences
    with pytest.raises(ParameterError):
        Voice("tweet", banned=("Sure", ""))
    with pytest.raises(ParameterError):
        Voice("tweet", min_new_tokens=-1)


def test_prefill_is_an_opened_assistant_turn_and_the_system_message_comes_first():
    v = document_voice("movie review")
    chat = with_voice([{"role": "user", "content": "Write one."}], v)
    assert [m["role"] for m in chat] == ["system", "user", "assistant"]
    assert chat[-1]["content"] == 'Here is the movie review:\n\n"' and all(is_sealed(m["content"]) for m in (chat[0], chat[-1]))
    assert all(isinstance(m["content"], Public) for m in (chat[0], chat[-1]))
    # a chat's own system message and its own prefill are kept
    own = with_voice([{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                      {"role": "assistant", "content": "Start"}], v)
    assert [m["content"] for m in own] == ["S", "U", "Start"]
    assert with_voice([{"role": "user", "content": "U"}], None) == [{"role": "user", "content": "U"}]
    rest, prefill = split_prefill(chat)
    assert prefill == 'Here is the movie review:\n\n"' and [m["role"] for m in rest] == ["system", "user"]
    assert split_prefill([{"role": "user", "content": "U"}])[1] is None


def test_stop_sequences_cut_after_leading_whitespace():
    assert cut_at_stop('  A tweet." and more', ("\n", '"')) == ("A tweet.", True)
    assert cut_at_stop("line one\nline two", ("\n",)) == ("line one", True)
    assert cut_at_stop("no stop here", ("\n",)) == ("no stop here", False)
    assert cut_at_stop("text", ()) == ("text", False)


def test_banned_openings_ban_only_the_completing_token_at_the_start():
    seqs = opening_sequences(_tok, ["Sure", "I'm sorry"])
    assert tuple(_tok("Sure")) in seqs and tuple(_tok(" Sure")) in seqs
    # at the start, the first token of a one-token phrase is banned; here the toy tokenizer
    # makes every phrase several tokens long, so only the token completing it is banned
    assert banned_next(_tok("Sur"), seqs) == {ord("e")}
    assert banned_next(_tok("I'm sorr"), seqs) == {ord("y")}
    assert banned_next(_tok("I'm"), seqs) == set()          # "I'm happy" is a fine opening
    assert banned_next(_tok("The Sur"), seqs) == set()      # only at the start of a text
    ban = OpeningBan.build(_tok, ["Sure"])
    assert ban.reach == 5 and ban(_tok("Sur")) == {ord("e")} and ban(_tok("Sure, it")) == set()
    assert OpeningBan.build(_tok, []).reach == 0


def test_decoding_rules_are_functions_of_the_text_tokens_only():
    rules = DecodingRules(_tok, _detok, 200, [0], stop=("\n",), banned=("Hi!",), min_new_tokens=3)
    assert rules.active
    # before the minimum length: no end token and no token that holds a stop sequence
    assert {0, ord("\n")} <= rules.blocked(_tok("ab")) and 0 not in rules.blocked(_tok("abc"))
    assert ord("!") in rules.blocked(_tok("Hi"))
    assert rules.ended(_tok("one\n")) and not rules.ended(_tok("one"))
    assert rules.cut("one\ntwo") == "one"
    # the same tokens give the same answer, however often and in whatever order it is asked
    assert rules.blocked(_tok("Hi")) == rules.blocked(_tok("Hi"))
    assert not DecodingRules(_tok, _detok, 200, [0]).active


def _ngrams(ids, n):
    return [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]


def test_no_repeat_ngram_blocks_exactly_the_tokens_that_would_repeat_an_ngram():
    # "ab" occurred followed by "c" and by "d": after "...ab" both are blocked, nothing else
    assert repeated_ngram_next(_tok("abcxabdyab"), 3) == {ord("c"), ord("d")}
    assert repeated_ngram_next(_tok("abcab"), 3) == {ord("c")}
    assert repeated_ngram_next(_tok("abcab"), 4) == set()       # "cab" never occurred before the end
    assert repeated_ngram_next(_tok("ab"), 3) == set() and repeated_ngram_next(_tok("aaaa"), 0) == set()
    assert repeated_ngram_next(_tok("aa"), 2) == {ord("a")}
    # brute force: a token is blocked iff appending it makes some n-gram occur twice
    rng = np.random.default_rng(0)
    for _ in range(300):
        ids = [int(x) for x in rng.integers(97, 100, size=int(rng.integers(0, 12)))]
        n = int(rng.integers(2, 5))
        base = set(_ngrams(ids, n))
        for t in range(97, 100):
            fresh_repeat = len(ids) + 1 >= n and tuple((ids + [t])[-n:]) in base
            assert (t in repeated_ngram_next(ids, n)) == fresh_repeat, (ids, n, t)


def test_no_repeat_ngram_in_the_rules_and_its_bad_values():
    rules = DecodingRules(_tok, _detok, 200, [0], no_repeat_ngram=3)
    assert rules.active and rules.blocked(_tok("abcab")) == {ord("c")}
    assert check_no_repeat_ngram(0) == 0 and check_no_repeat_ngram(4) == 4
    for bad in (1, -1, 2.5, "3"):
        with pytest.raises(ParameterError, match="no_repeat_ngram"):
            check_no_repeat_ngram(bad)
    from dpkit.methods.pp import Config
    assert Config(epsilon=8.0).no_repeat_ngram == 3 and Config(epsilon=8.0).settings().no_repeat_ngram == 3
    with pytest.raises(ParameterError, match="no_repeat_ngram"):
        Config(epsilon=8.0, no_repeat_ngram=1)


# ------------------------------------------------------------------ through a backend
class _Echo(Backend):
    """A local fake: answers each chat with a fixed text; records what it was given."""

    name = "echo"
    remote = False

    def __init__(self, answer):
        super().__init__("echo-model")
        self.answer, self.seen, self.params = answer, [], []

    def _generate(self, chats, params):
        self.seen += chats
        self.params.append(params)
        return [self.answer for _ in chats]


def test_a_backend_applies_the_voice_and_cuts_at_stop():
    backend = _Echo('A tweet about sleep."\nSure, here is another.')
    voice = document_voice("health news tweet")
    out = backend.generate_batch(["Write one."], voice=voice)
    assert out == ["A tweet about sleep."]
    chat = backend.seen[0]
    assert chat[0] == {"role": "system", "content": "You write health news tweets."}
    assert chat[-1] == {"role": "assistant", "content": 'Here is the health news tweet:\n\n"'}
    p = backend.params[0]
    assert p.stop == voice.stop and p.banned == voice.banned
    assert p.voice_kwargs() == {"stop": voice.stop, "banned": voice.banned}
    with pytest.raises(ParameterError):
        backend.generate_batch(["x"], voice="tweet")


def test_requests_without_a_voice_keep_their_cache_keys():
    from dataclasses import asdict

    plain = GenerationParams.checked(16, 0.0, None, 3)
    assert plain.key_params() == {k: v for k, v in asdict(plain).items()
                                  if k in ("max_new_tokens", "temperature", "top_p", "seed")}
    voiced = GenerationParams.checked(16, 0.0, None, 3, document_voice("tweet"))
    assert voiced.key_params()["stop"] == ["\n", '"'] and "min_new_tokens" not in voiced.key_params()


# ------------------------------------------------------------------ private prediction under the voice
def test_the_document_template_frames_every_row_alike_and_the_public_row_has_no_record():
    from dpkit.privpred.prompts import document_template

    t = document_template("health news tweet")
    a, b = t.private_message("Sleep well.", "goodhealth"), t.private_message("Eat greens!", "goodhealth")
    head, tail = a.split("Sleep well.")
    assert b == head + "Eat greens!" + tail            # the same public frame around each row's own record
    public = t.public_message("goodhealth")
    assert "Sleep well." not in public and "goodhealth" in public and "health news tweet" in public
    assert t.system == "You write health news tweets." and t.answer_prefix == 'Here is the health news tweet:\n\n"'
    assert document_template("health news tweet", prefill='"').answer_prefix == '"'
    with pytest.raises(ParameterError):
        document_template("")
    with pytest.raises(ParameterError):
        document_template("tweet", prefill="{x}")


@pytest.fixture(scope="module")
def lm():
    from dpkit.models import load_lm

    return load_lm()


def _rows(lm, texts):
    from dpkit.privpred.prompts import document_template

    t = document_template("one-sentence movie review")
    return ([t.render(lm, t.private_message(x, "positive")) for x in texts],
            t.render(lm, t.public_message("positive")))


@pytest.mark.slow
def test_private_decoding_under_the_voice_keeps_the_public_row_independent_and_obeys_the_rules(lm):
    from dpkit.privpred import DecodeSettings, decode_batch

    reviews = ["A warm, funny film.", "Great acting.", "I loved it.", "Charming and smart."]
    private, public = _rows(lm, reviews)
    st = DecodeSettings(expected_batch_size=2, clip=2, temperature=2.0, max_private_tokens=2, max_new_tokens=12,
                        top_k=10, stop=("\n", '"'), banned=BANNED_OPENINGS, min_new_tokens=4, finish_public=True,
                        no_repeat_ngram=2)
    traces, results = [], []
    for batch in ([], private[:1], private):
        seen = []
        results.append(decode_batch(lm, batch, public, st, np.random.default_rng(0),
                                    on_step=lambda i, z: seen.append(z.clone())))
        traces.append(seen)
    # the public row's logits at each step depend on the released tokens only, not on the private rows:
    # where two batches released the same tokens, the public logits are bit-identical
    for res, trace in zip(results[1:], traces[1:]):
        same = 0
        for a, b in zip(results[0].examples[0].token_ids, res.examples[0].token_ids):
            if a != b:
                break
            same += 1
        assert all(torch.equal(x, y) for x, y in zip(traces[0][:same + 1], trace[:same + 1]))
    for res in results:
        ex = res.examples[0]
        # the cap r = 2 was reached, and the text went on from the public row (post-processing)
        assert res.private_tokens == 2 and sum(ex.private) == 2
        assert len(ex.token_ids) >= 4 or ex.complete     # no end before the public minimum length
        assert not any(ex.text.startswith(p) for p in BANNED_OPENINGS)
        assert "\n" not in ex.text and '"' not in ex.text
        assert len(set(_ngrams(ex.token_ids, 2))) == len(_ngrams(ex.token_ids, 2))   # the no-repeat rule held


@pytest.mark.slow
def test_private_decoding_never_repeats_an_ngram_under_the_rule(lm):
    from dpkit.privpred import DecodeSettings, decode_batch

    private, public = _rows(lm, ["A warm, funny film.", "Great acting.", "I loved it.", "Charming."])
    # a sharp decoder (s far below the rows present) on 30 tokens: without the rule it may loop
    for n in (2, 3):
        st = DecodeSettings(expected_batch_size=1, clip=2, temperature=0.5, max_private_tokens=30,
                            max_new_tokens=30, top_k=10, no_repeat_ngram=n)
        ids = decode_batch(lm, private, public, st, np.random.default_rng(n)).examples[0].token_ids
        assert len(set(_ngrams(ids, n))) == len(_ngrams(ids, n)), (n, ids)


@pytest.mark.slow
def test_without_finish_public_the_cap_ends_the_text(lm):
    from dpkit.privpred import DecodeSettings, decode_batch

    private, public = _rows(lm, ["A warm, funny film.", "Great acting."])
    st = DecodeSettings(expected_batch_size=2, clip=2, temperature=2.0, max_private_tokens=2, max_new_tokens=12,
                        top_k=10)
    res = decode_batch(lm, private, public, st, np.random.default_rng(0))
    assert len(res.examples[0].token_ids) <= 2 and res.stopped_by == "private-token cap r"


# ------------------------------------------------------------------ the real model writes the document
@pytest.mark.slow
def test_the_bundled_model_on_llamacpp_writes_under_the_voice():
    pytest.importorskip("llama_cpp")
    from dpkit.backends.local import LocalBackend

    backend = LocalBackend(runtime="llamacpp")
    voice = document_voice("one-sentence movie review")
    gen = backend.generator
    rendered = gen.chat(with_voice([{"role": "user", "content": "Write one movie review."}], voice))
    assert rendered.endswith('<|im_start|>assistant\nHere is the one-sentence movie review:\n\n"')
    assert "SmolLM" not in rendered
    texts = backend.generate_batch(["Write one one-sentence movie review about a slow thriller.",
                                    "Write one one-sentence movie review of a comedy."],
                                   max_new_tokens=32, temperature=0.0, voice=voice)
    for text in texts:
        assert text and "\n" not in text and '"' not in text
        assert not any(text.startswith(p) for p in BANNED_OPENINGS)
    # the banned openings reach the logits: a greedy answer that would open with one no longer does
    ids = gen._encode([gen.chat([{"role": "user", "content": "Say: Sure, here is a review."}])])
    free = gen.detokenize(gen.generate_ids(ids, max_new_tokens=4)[0])
    banned = gen.detokenize(gen.generate_ids(ids, max_new_tokens=4,
                                             ban=OpeningBan.build(gen.tokenize, BANNED_OPENINGS))[0])
    if free.lstrip().startswith("Sure"):
        assert not banned.lstrip().startswith("Sure")


# ------------------------------------------------------------------ dpkit synth --document-type
class _Recorder(Backend):
    """A local fake for the CLI: records each request's voice (its chats and parameters)."""

    name = "rec"
    remote = False

    def __init__(self):
        super().__init__("rec-model")
        self.chats, self.params = [], []

    def _generate(self, chats, params):
        self.chats += chats
        self.params.append(params)
        return ["A short review of a film." for _ in chats]

    def describe(self):
        return {"backend": "rec", "model": "rec-model"}


@pytest.mark.parametrize("method", ["kps", "dpst"])
def test_synth_document_type_is_recorded_and_reaches_the_prompt(method, tmp_path, monkeypatch):
    import json

    import dpkit.backends
    from dpkit.cli import main

    backend = _Recorder()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    out = tmp_path / "run"
    code = main(["synth", method, "--input", "data/own_data_sample.csv", "--text-column", "text", "--label-column",
                 "label", "--epsilon", "8", "--smoke", "--seed", "1", "--out", str(out),
                 "--document-type", "customer review"] + (["--set", "n_articles=12"] if method == "dpst" else []))
    assert code == 0
    config = json.loads(next(out.rglob("config.json")).read_text())
    config = config["method_config"]
    assert config["document_type"] == "customer review" and config["voice"] is True
    assert backend.chats and all(any("customer review" in str(m["content"]) for m in chat) for chat in backend.chats)
    assert all(chat[-1]["role"] == "assistant" for chat in backend.chats)          # the opened answer
    assert all(p.stop and p.banned == BANNED_OPENINGS for p in backend.params)
    if method == "kps":   # the paper's rule holds under the voice: no class is named in a DP-KPS prompt
        import re

        labels = {"billing", "delivery", "product"}   # the sample's label set
        # the keyphrases are privatized data words and may include a label's word ("delivery" is frequent in
        # delivery messages); the rule is about the prompt around them: it never names the class
        text = " ".join(re.sub(r" about .*?\.", " about <keyphrases>.", str(m["content"]), flags=re.S)
                        for chat in backend.chats for m in chat).lower()
        assert "<keyphrases>" in text
        assert not any(label.lower() in text for label in labels)


def test_synth_document_type_bad_input_exits_2(tmp_path, capsys):
    from dpkit.cli import main

    out = tmp_path / "run"
    code = main(["synth", "pp", "--input", "data/own_data_sample.csv", "--text-column", "text", "--epsilon", "4",
                 "--out", str(out), "--document-type", "  "])
    assert code == 2 and not out.exists() and "--document-type" in capsys.readouterr().err
    code = main(["synth", "kps", "--epsilon", "4", "--plan", "--rows", "10", "--document-type", "tweet",
                 "--set", "document_type=review"])
    assert code == 2


def test_pp_release_config_carries_the_voice_and_the_document_template():
    from dpkit.methods import pp

    cfg = pp.Config(epsilon=4, document_type="health news tweet")
    assert cfg.stop == ("\n", '"') and cfg.finish_public and cfg.min_new_tokens == 8
    assert cfg.settings().finish_public and cfg.settings().banned == BANNED_OPENINGS
    t = pp.template_for(cfg, True)
    assert t.name == "document-labelled" and "health news tweet" in t.user
    assert pp.template_for(pp.Config(epsilon=4, voice=False), True).name == "labelled-text"
    with pytest.raises(ParameterError):
        pp.Config(epsilon=4, document_type=" ")


# ------------------------------------------------------------------ a leading echo of the instruction
@pytest.mark.parametrize("text, label, expected", [
    ("The medical exam question: How to prevent dental cavities", "Dental", "How to prevent dental cavities"),
    ("A medical exam question is: Surgery: Can you name the nerve at risk?", "Surgery", "Can you name the nerve at risk?"),
    ("Surgery: A rare, genetic condition of the hip", "Surgery", "A rare, genetic condition of the hip"),
    ("Label: Dental: which tooth erupts first?", "Dental", "which tooth erupts first?"),
    ("Medical examination question 3 - Which nerve supplies the tongue?", "Dental", "Which nerve supplies the tongue?"),
    # not an echo: kept as written
    ("Surgical procedure: an emergency laparotomy", "Surgery", "Surgical procedure: an emergency laparotomy"),
    ("Facial nerve lies:", "Surgery", "Facial nerve lies:"),
    ("Which of the following is a medical exam question?", "Dental", "Which of the following is a medical exam question?"),
    # what would remain is too short: kept
    ("Medical exam question: Teeth", "Dental", "Medical exam question: Teeth"),
])
def test_strip_echo_drops_a_leading_echo_of_the_document_type_or_label_only(text, label, expected):
    from dpkit.models.voice import strip_echo

    assert strip_echo(text, "medical exam question", [label]) == expected


def test_strip_echo_leaves_real_texts_of_the_tuning_sets_alone():
    """Measured on all 3,600 real texts read here: 1 changed ("Newsflash: ..." of the health tweets)."""
    from dpkit.data import load_dataset
    from dpkit.models.voice import strip_echo

    changed = total = 0
    for name, doc in (("rotten_tomatoes", "one-sentence movie review"), ("health_tweets", "health news tweet"),
                      ("medical", "medical exam question")):
        data = load_dataset(name, n_classes=2, max_per_class=600, seed=0, test_fraction=1 / 6)
        labels = [str(n).replace("_", " ").capitalize() for n in data.label_names]
        texts = list(data.train_texts) + list(data.test_texts)
        total += len(texts)
        changed += sum(strip_echo(t, doc, labels) != t for t in texts)
    assert total >= 3000 and changed / total <= 0.001


def test_the_pp_template_strips_the_echo_of_every_released_text_alike():
    from dpkit.privpred.prompts import document_template

    t = document_template("medical exam question")
    assert t.finish("The medical exam question: How to prevent dental cavities", "Dental") == \
        "How to prevent dental cavities"
    assert t.finish("How to prevent dental cavities", "Dental") == "How to prevent dental cavities"
    kept = document_template("medical exam question", strip_echo=False)
    assert kept.finish("Dental: which tooth erupts first?", "Dental") == "Dental: which tooth erupts first?"
    assert t.finish("Dental: which tooth erupts first?", "Dental") == "which tooth erupts first?"
    tweets = document_template("health news tweet")
    assert tweets.finish("Good Health: Eat greens every day.", "Goodhealth") == "Eat greens every day."
    assert tweets.finish("Well: My stroke of luck today", "Goodhealth") == "Well: My stroke of luck today"
    from dpkit.models.voice import strip_echo     # a type without a 3-letter word: "label" and the label only
    assert strip_echo("x: y z w", "a b") == "x: y z w"
    assert strip_echo("Dental: which tooth erupts first?", "a b", ["Dental"]) == "which tooth erupts first?"
