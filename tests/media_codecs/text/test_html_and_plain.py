"""The HTML and plain-text codecs on real documents: splices into the original bytes, never a re-serialisation;
the mark in body text only; the token in a meta element; detection of text declared as text."""

from __future__ import annotations

import re

import lxml.html
import pytest

from media_codecs import UnsupportedFormat, detect, get_codec
from media_codecs.text import zerowidth as zw
from tests.text_samples import HTML_PAGE, MIXED, english
from tests.waiting import CpuSpent

MARK = 0x7E57_0000_CAFE_0042
TOKEN = "svc_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAh"
html, plain = get_codec("html"), get_codec("txt")


def _sign(codec, data: bytes) -> bytes:
    return codec.embed_token(codec.embed_watermark(data, MARK), TOKEN)


def test_html_is_spliced_never_reserialised():
    signed = _sign(html, HTML_PAGE.encode()).decode()
    assert zw.strip_marks(signed).replace(f'<meta name="provenance-token" content="{TOKEN}">', "") == HTML_PAGE
    assert signed.index('<meta name="provenance-token"') == HTML_PAGE.index("<head>") + len("<head>")
    assert html.extract_token(signed.encode()) == TOKEN and html.extract_watermark(signed.encode()) == MARK


def test_the_html_mark_is_in_body_text_only():
    signed = _sign(html, HTML_PAGE.encode()).decode()
    runs = [m.start() for m in zw._RUNS.finditer(signed)]
    assert len(runs) == 2  # the long <p> and the long <li>; not the short item, title, pre, comment, textarea
    for forbidden in (r"<script.*?</script>", r"<style.*?</style>", r"<pre>.*?</pre>", r"<!--.*?-->",
                      r"<textarea.*?</textarea>", r"<title>.*?</title>", r"<[^>]*>"):
        for element in re.finditer(forbidden, signed, re.S):
            assert not zw._RUNS.search(element.group(0)), forbidden
    assert re.search(r"&amp;|&rsquo;|&#8217;|&#x2019;", signed)  # entities untouched


def test_html_text_content_keeps_the_mark_and_a_removed_meta_leaves_the_body_mark():
    signed = _sign(html, HTML_PAGE.encode())
    assert zw.extract(lxml.html.fromstring(signed.decode()).text_content()) == MARK
    without_meta = html.strip_token(signed)
    assert html.extract_token(without_meta) is None and html.extract_watermark(without_meta) == MARK


def test_the_token_goes_where_a_head_would_begin_in_a_document_without_one():
    for document, at in (("<!doctype html><html lang=en><body><p>Hi</p></body></html>",
                          "<!doctype html><html lang=en>"),
                         ("<p>Just a fragment, no head.</p>", ""),
                         ("\ufeff<!DOCTYPE html>\n<p>after a doctype</p>", "\ufeff<!DOCTYPE html>\n")):
        signed = html.embed_token(document.encode(), TOKEN).decode()
        assert signed == at + f'<meta name="provenance-token" content="{TOKEN}">' + document[len(at):]
        assert html.strip_token(signed.encode()).decode() == document
        parsed = lxml.html.document_fromstring(signed)
        assert parsed.find("head/meta").get("content") == TOKEN  # a parser puts it in the implied head


def test_signing_again_replaces_the_token_and_the_mark():
    once = _sign(html, HTML_PAGE.encode())
    twice = html.embed_token(html.embed_watermark(once, MARK + 1), "svc_other")
    assert html.extract_token(twice) == "svc_other" and html.extract_watermark(twice) == MARK + 1
    assert twice.decode().count("provenance-token") == 1
    assert html.strip_token(twice) == html.embed_watermark(HTML_PAGE.encode(), MARK + 1)


def test_the_token_is_read_whatever_the_attribute_order():
    reordered = f"<html><head><META content='{TOKEN}' NAME=provenance-token></head></html>".encode()
    assert html.extract_token(reordered) == TOKEN
    with pytest.raises(ValueError):
        html.embed_token(HTML_PAGE.encode(), 'svc_"><script>alert(1)</script>')


def test_plain_text_round_trip_keeps_bom_and_crlf_and_strips_to_the_input():
    text = ("\ufeff" + english("\r\n")).encode()
    marked = plain.embed_watermark(text, MARK)
    assert marked.startswith(b"\xef\xbb\xbf") and b"\r\n\r\n" in marked
    assert plain.strip_token(marked) == text and plain.extract_watermark(marked) == MARK
    assert plain.embed_token(marked, TOKEN) == marked and plain.extract_token(marked) is None
    mixed = MIXED.encode()
    assert plain.strip_token(plain.embed_watermark(mixed, MARK)) == mixed


@pytest.mark.parametrize(("data", "expected"), [
    (HTML_PAGE.encode(), "html"),
    (b"<p>A paragraph of <b>markup</b> without a doctype.</p>", "html"),
    (english().encode(), "txt"),
    ("\ufeffcaf\u00e9 \u2014 text with a BOM".encode(), "txt"),
    (b"x < y and a > b is not markup", "txt"),
])
def test_text_formats_are_told_apart(data, expected):
    assert detect(data).format == expected and detect(data, "text").format == expected


@pytest.mark.parametrize("data", [b"\x00\x01\x02binary", b"caf\xe9 latin-1", bytes(range(256)), b"\x89PNG\r\n\x1a\n"])
def test_binary_or_non_utf8_is_not_text(data):
    with pytest.raises(UnsupportedFormat):
        detect(data, "text")


def test_a_non_utf8_byte_past_the_head_is_refused_when_opened():
    data = english().encode() * 100 + b"\xff tail"
    assert detect(data).format == "txt"
    with pytest.raises(UnsupportedFormat, match="not UTF-8"):
        plain.open(data)


def test_a_text_too_short_for_a_run_cannot_carry_the_mark():
    assert not plain.watermark_possible(b"word") and not html.watermark_possible(b"<p>Hi</p>")


def test_reading_never_scans_the_markup_and_large_texts_are_not_marked(monkeypatch):
    tag_bomb = b"<!DOCTYPE html><body>" + b"<b>x</b>" * 2_000_000  # 16 MB of tags
    with CpuSpent() as spent:
        media = html.open(tag_bomb)
        assert html.extract_token(media) is None and html.extract_watermark(media) is None
        html.strip_token(media)
    # The work bound is that the markup was never scanned; the CPU one catches a quadratic pass (this
    # process's CPU, which a busy machine does not stretch; the timing: bench/codec_cpu.py).
    assert "scan" not in media._cache and spent.seconds < 2.0, spent.seconds
    monkeypatch.setattr(zw, "MAX_MARKED_CHARS", 1000)
    assert not html.watermark_possible(HTML_PAGE.encode()) and not plain.watermark_possible(english().encode())
    assert html.extract_token(html.embed_token(HTML_PAGE.encode(), TOKEN)) == TOKEN  # the token still goes in
