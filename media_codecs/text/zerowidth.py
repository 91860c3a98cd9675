"""The text watermark: a 64-bit id hidden in runs of zero-width characters, one run a paragraph.

Pure: str in, str out, no Django.

A run is ``RUN_LENGTH`` (29) characters of ``ALPHABET``, seven invisible format characters (category
Cf, bidi class BN) that Unicode normalisation (NFC, NFKC) leaves alone and that ``str.split()`` does
not take for whitespace: the id with a CRC-16, scrambled with a fixed key and written in base 7.
Every paragraph of at least ``MIN_WORDS`` words gets one whole run, so any such paragraph quoted
alone identifies the record; a text of at least MIN_WORDS words in shorter paragraphs gets one run in
its longest paragraph; a shorter text is not marked (its token is what identifies it).

Where a run goes: right before a word in the middle of the paragraph, after whitespace, and only
before a letter or digit. That place is a boundary of every grapheme cluster, emoji sequence and
combining sequence, and characters of bidi class BN are ignored by the bidirectional algorithm, so
no right-to-left run is split. ZERO WIDTH JOINER is not in the alphabet (it would join emoji and
change the shape of Arabic letters); ZERO WIDTH NON-JOINER is harmless next to a space.

Reading takes every maximal run of alphabet characters that is exactly ``RUN_LENGTH`` long and
decodes with a matching CRC; the id most runs agree on wins, a tie is no id. Removing the runs that
decode (``strip_marks``) gives back the text exactly: a run is never placed next to an alphabet
character the text already had, so each maximal run is all ours.

What loses the mark: any tool that drops these characters (copy code that strips zero-width
characters, sanitisers, retyping), and paraphrase. Verification then falls back on the token and
the record (docs/decisions.md, "Text").
"""

from __future__ import annotations

import binascii
import re
import unicodedata
from collections import Counter

MARK_BITS = 64
ALPHABET = "\u2060\u2061\u2062\u2063\u2064\u200b\u200c"  # WJ, four invisible operators, ZWSP, ZWNJ
BASE = len(ALPHABET)
_CHECK_BITS = 16
_PAYLOAD_BITS = MARK_BITS + _CHECK_BITS
RUN_LENGTH = next(n for n in range(1, 100) if BASE**n >= 1 << _PAYLOAD_BITS)  # 29
_SCRAMBLE = 0x9E37_79B9_7F4A_7C15_D1B5  # 80 bits: runs of neighbouring ids look unrelated
MIN_WORDS = 40  # a paragraph this long carries the whole id
# Marking looks at every word; past this many characters a text is signed without the mark (its token
# identifies it), so a 50 MB upload cannot hold a signing worker for seconds. Reading stays a regex scan.
MAX_MARKED_CHARS = 8_000_000

_DIGIT = {ch: value for value, ch in enumerate(ALPHABET)}
_RUNS = re.compile(f"[{ALPHABET}]+")
_PARAGRAPH_BREAK = re.compile(r"(?:\r?\n[ \t\f\v]*){2,}")
_WORD = re.compile(r"\S+")


def run_for(mark_id: int) -> str:
    """The run of zero-width characters that carries `mark_id`. ValueError outside 64 bits."""
    if not 0 <= mark_id < 1 << MARK_BITS:
        raise ValueError("the mark id must be a 64-bit unsigned integer")
    check = binascii.crc_hqx(mark_id.to_bytes(8, "big"), 0xFFFF)
    value = ((mark_id << _CHECK_BITS) | check) ^ _SCRAMBLE
    digits = []
    for _ in range(RUN_LENGTH):
        value, digit = divmod(value, BASE)
        digits.append(ALPHABET[digit])
    return "".join(digits)


def id_of_run(run: str) -> int | None:
    """The id a run carries, or None when it is not one of ours (wrong length, value or check)."""
    if len(run) != RUN_LENGTH:
        return None
    value = 0
    for ch in reversed(run):
        digit = _DIGIT.get(ch)
        if digit is None:
            return None
        value = value * BASE + digit
    if value >= 1 << _PAYLOAD_BITS:
        return None
    value ^= _SCRAMBLE
    mark_id, check = value >> _CHECK_BITS, value & 0xFFFF
    return mark_id if binascii.crc_hqx(mark_id.to_bytes(8, "big"), 0xFFFF) == check else None


def embed(text: str, mark_id: int) -> str:
    """`text` with a run carrying `mark_id` in every paragraph of at least MIN_WORDS words (or in its
    longest paragraph when none is that long but the text is); any run of ours already there is
    replaced. A shorter text, or one with no place for a run, comes back unmarked (see `sites`)."""
    text = strip_marks(text)
    run = run_for(mark_id)
    pieces, last = [], 0
    for position in sites(text):
        pieces += [text[last:position], run]
        last = position
    pieces.append(text[last:])
    return "".join(pieces)


def sites(text: str) -> list[int]:
    """Where `embed` puts runs: one place a qualifying paragraph, in text order."""
    paragraphs = [(start, end, len(_WORD.findall(text, start, end))) for start, end in _paragraphs(text)]
    chosen = [_site(text, start, end) for start, end, words in paragraphs if words >= MIN_WORDS]
    chosen = [site for site in chosen if site is not None]
    if not chosen and sum(words for _, _, words in paragraphs) >= MIN_WORDS:
        # Long enough in all, in short paragraphs (verse, lists): the longest one with a place carries it.
        for start, end, _ in sorted(paragraphs, key=lambda p: -p[2]):
            site = _site(text, start, end)
            if site is not None:
                return [site]
    return chosen


def extract(text: str) -> int | None:
    """The id most runs in `text` carry, or None (no run decodes, or two ids tie)."""
    votes = Counter(mark for mark in map(id_of_run, _RUNS.findall(text)) if mark is not None)
    if not votes:
        return None
    ranked = votes.most_common(2)
    if len(ranked) == 2 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def strip_marks(text: str) -> str:
    """`text` without the runs that decode: the text as it was before `embed`."""
    return _RUNS.sub(lambda run: "" if id_of_run(run.group()) is not None else run.group(), text)


def _paragraphs(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for gap in _PARAGRAPH_BREAK.finditer(text):
        spans.append((start, gap.start()))
        start = gap.end()
    spans.append((start, len(text)))
    return [(start, end) for start, end in spans if start < end]


def _site(text: str, start: int, end: int) -> int | None:
    """The word start nearest the paragraph's middle word that follows whitespace and is a letter or digit."""
    words = [match.start() for match in _WORD.finditer(text, start, end)]
    return middle_site(text, [position for position in words[1:] if text[position - 1].isspace()], len(words) // 2)


def middle_site(text: str, word_starts: list[int], middle: int) -> int | None:
    """Of `word_starts` (each after whitespace), the one nearest index `middle` a run may precede."""
    for index in sorted(range(len(word_starts)), key=lambda i: (abs(i - middle), i)):
        if can_follow_a_run(text[word_starts[index]]):
            return word_starts[index]
    return None


def can_follow_a_run(ch: str) -> bool:
    # A letter or digit starts a new grapheme cluster (never a combining mark, an emoji part or a
    # joiner), and is not one of our characters.
    return ch not in _DIGIT and unicodedata.category(ch)[0] in "LN"
