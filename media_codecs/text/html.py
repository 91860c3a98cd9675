"""HTML: the token in a meta element, the zero-width mark in the body's text. Never re-serialised.

The document is scanned, not parsed into a tree: markup (tags with their attributes, comments,
doctypes, CDATA) and the raw text of `script`, `style`, `textarea`, `title` and their kind are
skipped over, and what is left are text nodes with their exact offsets. Both insertions are
splices into the original bytes, so everything else stays byte for byte as it came (attribute
order, entities, whitespace, comments).

- Token: `<meta name="provenance-token" content="svc_...">`, right after the `<head>` tag, or
  where a head would begin (after the doctype and `<html>`) in a document without one: an HTML
  parser puts a meta element met before any content into the implied head. `strip_token` removes
  exactly that element, so `content_hash` covers the document with the mark in it, as the image
  hash covers its marked pixels.
- Mark: one run (media_codecs.text.zerowidth) in every block of at least MIN_WORDS words of body
  text (the longest block when none is that long but the body is), before a word in one text node, never inside
  `pre`, `script`, `style`, `textarea`, `template`, attributes or comments. Blocks are delimited by
  block-level tags (`p`, `div`, `li`, headings, table cells, `br`...); inline markup (`b`, `a`,
  `span`...) does not end one, so `lxml`'s `text_content()` keeps each run whole.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from media_codecs.base import SCORE_MAGIC, SCORE_NONE, SCORE_WEAK, Media
from media_codecs.disclosure import Disclosure
from media_codecs.label import Label
from media_codecs.progress import Progress
from media_codecs.text import zerowidth
from media_codecs.text.base import Utf8TextCodec, head_text

META_NAME = "provenance-token"
_TOKEN = r"svc_[A-Za-z0-9_.-]{1,124}"
# The disclosure's meta elements, written right after ours (Disclosure.fields() name -> meta name).
DISCLOSURE_META = {"source_type": "provenance-digital-source-type", "provider_name": "provenance-provider",
                   "system_name": "provenance-system", "system_version": "provenance-system-version",
                   "created": "provenance-created", "identifier": "provenance-identifier"}
_OUR_META = re.compile(f'<meta name="{META_NAME}" content="{_TOKEN}">'
                       f'(?:<meta name="(?:{"|".join(DISCLOSURE_META.values())})" content="[^"<>]*">)*')
_ANY_OUR_META = re.compile(rf"""<meta\s[^>]*?\bname\s*=\s*["']?{META_NAME}["']?[^>]*>""", re.I)
_META_CONTENT = re.compile(rf"""\bcontent\s*=\s*["']?({_TOKEN})""")
_MARKUP = re.compile(r"""
    <!--.*?(?:-->|\Z)                                       # comment (unterminated: to the end)
  | <!\[CDATA\[.*?(?:\]\]>|\Z)
  | <![^>]*(?:>|\Z)                                         # doctype, bogus comment
  | <\?[^>]*(?:>|\Z)
  | </?([A-Za-z][^\s/>]*)(?:[^>"']|"[^"]*"|'[^']*')*(?:>|\Z)  # tag: attribute values may hold '>'
""", re.S | re.X)
_RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
                       "noscript", "plaintext"})
_NO_MARK = frozenset({"pre", "template", "svg", "math"})  # text in these is read as it is: left alone
_BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details", "dialog", "div", "dl",
    "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "head",
    "header", "hgroup", "hr", "html", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
})
_DOCUMENT_START = re.compile(r"\ufeff?\s*(?:<!doctype[^>]*>\s*)?(?:<html\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>)?", re.I)
_HTML_SIGNATURE = re.compile(r"\ufeff?\s*(?:<!doctype\s+html\b|<html\b)", re.I)
_HTML_HINT = re.compile(r"<(?:head|body|p|div|span|a|h[1-6]|ul|ol|li|table|meta|title|br|img)\b", re.I)


@dataclass
class Block:
    word_count: int = 0
    word_starts: list[int] = field(default_factory=list)  # text offsets after whitespace, in text nodes


@dataclass(frozen=True)
class HtmlDocument:
    text: str
    blocks: tuple[Block, ...]


def scan(text: str) -> HtmlDocument:
    """The body text blocks of the document (word starts where a run may go), the head skipped."""
    blocks: list[Block] = []
    current = Block()
    in_head, no_mark = False, 0
    position = 0
    while position <= len(text):
        markup = _MARKUP.search(text, position)
        end = markup.start() if markup else len(text)
        if end > position and not in_head and not no_mark:
            _add_text(text, position, end, current)
        if markup is None:
            break
        position = markup.end()
        name = (markup.group(1) or "").lower()
        if not name:
            continue
        closing = markup.group(0).startswith("</")
        if name in _BLOCKS:
            blocks.append(current)
            current = Block()
        if name == "head":
            in_head = not closing
        elif name == "body" and not closing:
            in_head = False
        elif name in _NO_MARK:
            no_mark = max(0, no_mark - 1) if closing else no_mark + (not markup.group(0).endswith("/>"))
        elif name in _RAW_TEXT and not closing:
            close = re.compile(rf"</{re.escape(name)}\s*>", re.I).search(text, position)
            position = close.end() if close else len(text) + 1
    blocks.append(current)
    return HtmlDocument(text, tuple(block for block in blocks if block.word_count))


_BODY_TAG = re.compile(r"""<body\b(?:[^>"']|"[^"]*"|'[^']*')*>""", re.I)
_HEAD_CLOSE = re.compile(r"</head\s*>", re.I)
# The label's paragraph: its own look inline (a page's styles cannot hide what the attribute names).
LABEL_PARAGRAPH = ('<p data-provenance-label style="margin:0 0 1em;padding:.3em .6em;background:#222;color:#fff;'
                   'font:600 1rem/1.4 system-ui,sans-serif;display:inline-block">{text}</p>')


def labelled_html(text: str, label: Label) -> str:
    """The document with the label's paragraph first in its body (after `<body>`, else after the head, else
    after the doctype and `<html>`)."""
    body = _BODY_TAG.search(text)
    if body is not None:
        offset = body.end()
    else:
        head = _HEAD_CLOSE.search(text)
        offset = head.end() if head is not None else _DOCUMENT_START.match(text).end()
    return splice(text, [(offset, LABEL_PARAGRAPH.format(text=html.escape(label.text)))])


def head_end(text: str) -> int | None:
    """The offset just past the `<head ...>` tag, or None when the document has none before its body.

    Stops at the first sign of body content: a token is placed without scanning a whole document."""
    position = 0
    while True:
        markup = _MARKUP.search(text, position)
        if markup is None:
            return None
        if text[position : markup.start()].strip():
            return None  # text before any head: the body has begun
        position = markup.end()
        name = (markup.group(1) or "").lower()
        if name == "head" and not markup.group(0).startswith("</"):
            return markup.end()
        if name and name not in ("html", "meta", "link", "title", "base", "style", "script", "noscript", "template"):
            return None
        if name in _RAW_TEXT and not markup.group(0).startswith("</"):
            close = re.compile(rf"</{re.escape(name)}\s*>", re.I).search(text, position)
            if close is None:
                return None
            position = close.end()


def _add_text(text: str, start: int, end: int, block: Block) -> None:
    for word in re.finditer(r"\S+", text[start:end]):
        block.word_count += 1
        offset = start + word.start()
        if offset > start and text[offset - 1].isspace():
            block.word_starts.append(offset)


def mark_sites(document: HtmlDocument) -> list[int]:
    """Where runs go: one a block of at least MIN_WORDS words, or the longest block's when none is but the
    body text is; none in a shorter body."""
    sites = [_block_site(document.text, block) for block in document.blocks
             if block.word_count >= zerowidth.MIN_WORDS]
    sites = [site for site in sites if site is not None]
    if not sites and sum(block.word_count for block in document.blocks) >= zerowidth.MIN_WORDS:
        for block in sorted(document.blocks, key=lambda b: -b.word_count):
            site = _block_site(document.text, block)
            if site is not None:
                return [site]
    return sorted(sites)


def _block_site(text: str, block: Block) -> int | None:
    return zerowidth.middle_site(text, block.word_starts, len(block.word_starts) // 2)


def splice(text: str, insertions: list[tuple[int, str]]) -> str:
    pieces, last = [], 0
    for offset, inserted in sorted(insertions):
        pieces += [text[last:offset], inserted]
        last = offset
    pieces.append(text[last:])
    return "".join(pieces)


class HtmlCodec(Utf8TextCodec):
    format = "html"
    mime_type = "text/html; charset=utf-8"
    token_source = "metadata"  # addendum 5: an HTML meta element
    discloses_in_metadata = True  # meta elements after ours (DISCLOSURE_META)
    can_label = True  # a leading paragraph (LABEL_PARAGRAPH)
    document_name = "HTML document"  # parsed to its text; the markup is scanned only to sign (reading needs regexes)

    def score(self, head: bytes) -> int:
        """SCORE_MAGIC for a doctype or `<html>` first, SCORE_WEAK for other markup near the start."""
        text = head_text(head)
        if not text:
            return SCORE_NONE
        if _HTML_SIGNATURE.match(text):
            return SCORE_MAGIC
        return SCORE_WEAK if _HTML_HINT.search(text[:1024]) and text.lstrip("\ufeff \t\r\n").startswith("<") \
            else SCORE_NONE

    def watermark_possible(self, content: bytes | Media) -> bool:
        media = self.media(content)
        if len(media.container) > zerowidth.MAX_MARKED_CHARS:
            return False
        return bool(mark_sites(media.cached("scan", lambda: scan(zerowidth.strip_marks(media.container)))))

    def embed_watermark(self, content: bytes | Media, mark_id: int, progress: Progress | None = None,
                        label: Label | None = None) -> bytes:
        """The document with a run in each qualifying body block; runs of ours already there are replaced.
        With `label`, its paragraph leads the body first (`embed_label`)."""
        media = self.media(content)
        if label is None:
            unmarked = zerowidth.strip_marks(media.container)
            document = media.cached("scan", lambda: scan(unmarked))
        else:
            unmarked = zerowidth.strip_marks(labelled_html(media.container, label))
            document = scan(unmarked)
        run = zerowidth.run_for(mark_id)
        return splice(unmarked, [(site, run) for site in mark_sites(document)]).encode("utf-8")

    def embed_label(self, content: bytes | Media, label: Label) -> bytes:
        """The document with the label's paragraph first in its body (LABEL_PARAGRAPH)."""
        return labelled_html(self.media(content).container, label).encode("utf-8")

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Our meta element after `<head>` (or where the head would begin), replacing ours, followed by the
        disclosure's (DISCLOSURE_META), which go with it. ValueError for a token that is not `svc_` and
        [A-Za-z0-9_.-]."""
        if not re.fullmatch(_TOKEN, token):
            raise ValueError("a token is svc_ followed by letters, digits, '_', '.' or '-'")
        text = _OUR_META.sub("", self.media(content).container)
        offset = head_end(text)
        if offset is None:
            offset = _DOCUMENT_START.match(text).end()
        disclosed = "" if disclosure is None else "".join(
            f'<meta name="{DISCLOSURE_META[name]}" content="{html.escape(value, quote=True)}">'
            for name, value in disclosure.fields().items())
        return splice(text, [(offset, f'<meta name="{META_NAME}" content="{token}">{disclosed}')]).encode("utf-8")

    def extract_token(self, content: bytes | Media) -> str | None:
        """The token of a `provenance-token` meta element (its attributes in any order or quoting)."""
        for element in _ANY_OUR_META.finditer(self.media(content).container):
            found = _META_CONTENT.search(element.group(0))
            if found:
                return found.group(1)
        return None

    def strip_token(self, content: bytes | Media) -> bytes:
        """The document without our meta elements, exactly as `embed_token` wrote them."""
        return _OUR_META.sub("", self.media(content).container).encode("utf-8")


CODEC = HtmlCodec()
