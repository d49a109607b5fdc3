"""The public clean-up of a DP-ST rewrite: the answer prefix, echoes of the worked examples and repeated
sentences are removed (measured: 8 of 96 health-tweet rewrites at epsilon 8 repeated an example's sentence)."""

from dpkit.dpst.reconstruct import EXAMPLES, clean_output


def test_example_sentences_and_repeats_are_dropped():
    text = ("Output text: The team voted to confirm DeVos. Fans celebrated in the square. "
            "The coach praised the players. The vote was close. The vote was close.")
    assert clean_output(text) == "The team voted to confirm DeVos. The vote was close."


def test_a_text_of_its_own_is_left_as_it_is():
    for text in ("The clinic opened a ward. Doctors praised the nurses.", "Flu cases rose in March!", ""):
        assert clean_output(text) == text
    assert clean_output("Output text:  The bridge opened.") == "The bridge opened."


def test_a_text_made_only_of_echoes_becomes_the_fallback_or_stays():
    only = str(EXAMPLES[2][1]).split(":", 1)[1].strip()
    assert clean_output(only) == only
    assert clean_output(only, fallback="the clinic opened. the ward closed") == "the clinic opened. the ward closed"
    assert clean_output("A vote was held.", fallback="x") == "A vote was held."
