"""The zero-width text mark on real prose: every long paragraph carries the whole id, normalisation and
re-wrapping keep it, removing it gives the text back exactly, and it never lands inside a grapheme
cluster, an emoji sequence, a combining sequence or a right-to-left run."""

from __future__ import annotations

import random
import textwrap
import unicodedata

import pytest

from media_codecs.text import zerowidth as zw
from tests.text_samples import ENGLISH, MIXED, english

MARK = 0x0DEC_AF00_1234_5678


def _runs(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in zw._RUNS.finditer(text)]


def test_a_run_is_29_invisible_characters_that_decode_to_the_id():
    run = zw.run_for(MARK)
    assert len(run) == zw.RUN_LENGTH == 29 and set(run) <= set(zw.ALPHABET)
    assert zw.id_of_run(run) == MARK
    assert all(unicodedata.category(ch) == "Cf" and unicodedata.bidirectional(ch) == "BN" for ch in zw.ALPHABET)
    assert "\u200d" not in zw.ALPHABET  # the joiner would glue emoji and shape Arabic letters


def test_a_damaged_run_decodes_to_nothing():
    run = zw.run_for(MARK)
    assert zw.id_of_run(run[:-1]) is None and zw.id_of_run(run + run[0]) is None
    flipped = run[:5] + zw.ALPHABET[(zw.ALPHABET.index(run[5]) + 1) % zw.BASE] + run[6:]
    assert zw.id_of_run(flipped) is None
    with pytest.raises(ValueError):
        zw.run_for(1 << 64)


def test_every_paragraph_of_40_words_carries_the_whole_id_and_quotes_alone_identify():
    text = english()
    marked = zw.embed(text, MARK)
    long_paragraphs = [p for p in ENGLISH if len(p.split()) >= zw.MIN_WORDS]
    assert len(_runs(marked)) == len(long_paragraphs) == 4
    for quoted in marked.split("\n\n"):
        if len(zw.strip_marks(quoted).split()) >= zw.MIN_WORDS:
            assert zw.extract(quoted) == MARK
        else:
            assert zw.extract(quoted) is None


def test_removing_the_runs_gives_back_the_input_exactly_bom_and_crlf_included():
    text = "\ufeff" + english("\r\n")
    marked = zw.embed(text, MARK)
    assert marked.startswith("\ufeff") and "\r\n\r\n" in marked
    assert zw.strip_marks(marked) == text
    assert zw.extract(marked) == MARK
    assert zw.embed(marked, MARK + 1).count(zw.run_for(MARK + 1)) == 4  # replaced, not added
    assert zw.run_for(MARK) not in zw.embed(marked, MARK + 1)


def test_text_already_holding_alphabet_characters_is_given_back_exactly():
    text = english().replace("reader", "read\u200ber").replace("words", "\u200cwords")  # ZWSP, ZWNJ in use
    marked = zw.embed(text, MARK)
    assert zw.strip_marks(marked) == text and zw.extract(marked) == MARK


@pytest.mark.parametrize("form", ["NFC", "NFKC", "NFD", "NFKD"])
def test_normalisation_keeps_the_mark(form):
    marked = zw.embed(MIXED, MARK)
    assert zw.extract(unicodedata.normalize(form, marked)) == MARK


def test_whitespace_collapsing_and_rewrapping_keep_the_mark():
    marked = zw.embed(english(), MARK)
    collapsed = " ".join(marked.split())
    assert zw.extract(collapsed) == MARK
    assert zw.extract(textwrap.fill(collapsed, 60)) == MARK
    assert zw.extract("\n\n".join(textwrap.fill(p, 60) for p in marked.split("\n\n"))) == MARK


def test_runs_sit_between_whitespace_and_a_letter_never_inside_a_cluster_or_an_rtl_run():
    marked = zw.embed(MIXED, MARK)
    runs = _runs(marked)
    assert len(runs) == 4
    for start, end in runs:
        before, after = marked[start - 1], marked[end]
        assert before.isspace() and unicodedata.category(after)[0] in "LN"
        assert unicodedata.category(after) != "Mn"
    # What a reader sees is unchanged: every grapheme, emoji sequence and accent is where it was.
    assert zw.strip_marks(marked) == MIXED
    emoji_sequences = ["👩‍👩‍👧‍👦", "🇫🇷", "1️⃣", "👍🏽", "cafe\u0301", "nai\u0308ve"]
    assert all(sequence in marked for sequence in emoji_sequences)
    arabic = next(p for p in marked.split("\n\n") if "العربي" in p)
    hebrew = next(p for p in marked.split("\n\n") if "עברית" in p)
    for paragraph in (arabic, hebrew):  # the run is between two words of the RTL run, after a space
        start, end = _runs(paragraph)[0]
        assert paragraph[start - 1] == " " and unicodedata.bidirectional(paragraph[end]) in ("R", "AL")
        assert zw.extract(paragraph) == MARK


def test_deleting_a_tenth_of_the_words_of_a_document_keeps_the_id():
    marked = zw.embed(english() * 2, MARK)
    rng = random.Random(5)
    for _ in range(20):
        words = marked.split(" ")
        kept = [word for word in words if rng.random() >= 0.1]
        assert zw.extract(" ".join(kept)) == MARK


def test_a_long_text_of_short_paragraphs_is_marked_in_its_longest_and_a_short_text_not_at_all():
    verse = "\n\n".join(f"Line {n} of a poem with short stanzas only" for n in range(6))  # 48 words
    marked = zw.embed(verse, MARK)
    assert len(_runs(marked)) == 1 and zw.extract(marked) == MARK
    note = "A haiku has no long paragraph.\n\nStill it has words to carry\n\nthe mark in its longest line."
    assert zw.embed(note, MARK) == note


def test_text_with_no_place_for_a_run_comes_back_unmarked():
    for text in ("", "word", "🎉🎉🎉 🎉", "\u0301\u0301 ---"):
        assert zw.embed(text, MARK) == text and zw.sites(text) == []


def test_unmarked_paragraphs_never_give_an_id():
    rng = random.Random(11)
    vocabulary = " ".join(ENGLISH).split()
    for _ in range(1000):
        paragraph = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(5, 120)))
        if rng.random() < 0.3:  # natural zero-width characters, as Persian and Thai text hold
            paragraph = paragraph.replace(" ", "\u200c ", 3).replace("e", "e\u200b", 2)
        assert zw.extract(paragraph) is None


def test_two_documents_quoted_together_tie_to_no_id_unless_one_has_more():
    first, second = zw.embed(english(), MARK), zw.embed(english(), MARK + 1)
    assert zw.extract(first + second) is None
    assert zw.extract(first + second.split("\n\n")[0]) == MARK
