"""Private prediction's tokenizer, loaded by the class its saved folder names, is AutoTokenizer's tokenizer."""

from transformers import AutoTokenizer

from dpkit.privpred.llamacpp_engine import _bundled_tokenizer, saved_tokenizer

TEXTS = ["Hello world, here is a tweet", "Ünïcödé — and emoji 🌟 in a review.", "  spaces\tand\nnew lines  ", ""]


def test_the_saved_tokenizer_gives_autotokenizers_ids_specials_and_chat_template(tmp_path):
    bundled = _bundled_tokenizer()
    bundled.save_pretrained(tmp_path)
    direct, auto = saved_tokenizer(tmp_path), AutoTokenizer.from_pretrained(tmp_path)
    assert type(direct) is type(auto)
    for text in TEXTS:
        assert direct(text)["input_ids"] == auto(text)["input_ids"] == bundled(text)["input_ids"]
    for name in ("eos_token_id", "pad_token_id", "bos_token_id", "padding_side"):
        assert getattr(direct, name) == getattr(auto, name)
    chat = [{"role": "system", "content": "Write the document."}, {"role": "user", "content": "A tweet."}]
    assert (direct.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            == auto.apply_chat_template(chat, tokenize=False, add_generation_prompt=True))


def test_a_folder_that_names_no_known_class_goes_through_autotokenizer(tmp_path):
    import json

    _bundled_tokenizer().save_pretrained(tmp_path)
    config = tmp_path / "tokenizer_config.json"
    body = json.loads(config.read_text())
    body["tokenizer_class"] = "NoSuchTokenizerClass"
    config.write_text(json.dumps(body))
    try:
        loaded = saved_tokenizer(tmp_path)
    except (ValueError, OSError) as error:  # AutoTokenizer's own refusal of an unknown class
        assert "NoSuchTokenizerClass" in str(error)
    else:
        assert loaded("Hello")["input_ids"] == _bundled_tokenizer()("Hello")["input_ids"]
