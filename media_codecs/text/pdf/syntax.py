"""PDF object syntax (ISO 32000-1, 7.2 and 7.3): a bounded reader of direct and indirect objects.

Only the few objects the codec needs are ever parsed (trailers, the catalog, stream dictionaries),
so the reader keeps what re-writing the catalog needs: for each dictionary entry, where its key
and value sit in the buffer, so an entry is copied byte for byte instead of re-serialised.
Nesting is limited to MAX_NESTING and every object to MAX_TOKENS tokens: a hostile file cannot
recurse deeply or make one object allocate millions of Python values.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from media_codecs.errors import CorruptMedia, MediaTooLarge

MAX_NESTING = 64  # arrays and dictionaries inside one another; real files use fewer than ten
MAX_TOKENS = 200_000  # per object parsed: a catalog has a few dozen
_MAX_NUMBER_LENGTH = 32  # longer digit strings are not numbers any reader accepts

_SPACE_BYTES = rb"\x00\t\n\x0c\r "
_REGULAR = rb"[^\x00\t\n\x0c\r ()<>\[\]{}/%]"
SPACE = re.compile(rb"(?:[\x00\t\n\x0c\r ]|%[^\r\n]*)*")  # white space and comments (7.2.2, 7.2.3)
_NAME = re.compile(rb"/" + _REGULAR + rb"*")
_KEYWORD = re.compile(_REGULAR + rb"+")
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)")
_REF_TAIL = re.compile(rb"[\x00\t\n\x0c\r ]+(\d{1,10})[\x00\t\n\x0c\r ]+R(?!" + _REGULAR + rb")")
_HEX_STRING = re.compile(rb"<[0-9A-Fa-f\x00\t\n\x0c\r ]*>")
_LITERAL_SPECIAL = re.compile(rb"[()\\]")
_NAME_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{2})")
_OBJECT_HEADER = re.compile(rb"(\d{1,10})[\x00\t\n\x0c\r ]+(\d{1,5})[\x00\t\n\x0c\r ]+obj(?!" + _REGULAR + rb")")
_STREAM_KEYWORD = re.compile(rb"stream(?:\r\n|\n|\r)")


class Name(str):
    """A PDF name without its slash, #xx escapes decoded (7.3.5)."""


class String(bytes):
    """A string object as written, delimiters and escapes included (never decoded here)."""


class Ref(NamedTuple):
    number: int
    generation: int


class Dictionary(dict):
    """A dictionary whose entries remember where they were written, to be copied verbatim."""

    def __init__(self, buffer: bytes):
        super().__init__()
        self.buffer = buffer
        self.spans: dict[str, tuple[int, int, int, int]] = {}  # key start/end, value start/end

    def raw_key(self, key: str) -> bytes:
        start, end, _, _ = self.spans[key]
        return bytes(self.buffer[start:end])

    def raw_value(self, key: str) -> bytes:
        _, _, start, end = self.spans[key]
        return bytes(self.buffer[start:end])


class StreamStart(NamedTuple):
    """A stream object's dictionary and where its data begins (its length is resolved later)."""

    dictionary: Dictionary
    data_start: int


class Parser:
    """Reads objects from one buffer (the file, or a decoded object stream)."""

    def __init__(self, buffer: bytes):
        self.buffer = buffer
        self._budget = MAX_TOKENS

    def skip_space(self, position: int) -> int:
        return SPACE.match(self.buffer, position).end()

    def value(self, position: int) -> tuple[Any, int]:
        """The direct object at `position` and where it ends. Raises CorruptMedia, MediaTooLarge."""
        self._budget = MAX_TOKENS
        value, _, end = self._value(position, 0)
        return value, end

    def indirect(self, position: int, expected: int | None = None) -> tuple[Ref, Any, int]:
        """`n g obj <value>` at `position`: a StreamStart when the value opens a stream.

        Raises CorruptMedia when no object (or another object than `expected`) is there.
        """
        start = self.skip_space(position)
        header = _OBJECT_HEADER.match(self.buffer, start)
        if header is None:
            raise CorruptMedia(f"no PDF object at offset {position}")
        ref = Ref(int(header.group(1)), int(header.group(2)))
        if expected is not None and ref.number != expected:
            raise CorruptMedia(f"the cross-reference entry of object {expected} points at object {ref.number}")
        value, end = self.value(header.end())
        keyword = _STREAM_KEYWORD.match(self.buffer, self.skip_space(end))
        if keyword is None:
            return ref, value, end
        if not isinstance(value, Dictionary):
            raise CorruptMedia(f"object {ref.number} has stream data without a dictionary")
        return ref, StreamStart(value, keyword.end()), keyword.end()

    def _value(self, position: int, depth: int) -> tuple[Any, int, int]:
        buffer = self.buffer
        start = self.skip_space(position)
        self._budget -= 1
        if self._budget < 0:
            raise MediaTooLarge(f"a PDF object has more than {MAX_TOKENS} tokens")
        if depth > MAX_NESTING:
            raise CorruptMedia(f"PDF objects are nested more than {MAX_NESTING} deep")
        if start >= len(buffer):
            raise CorruptMedia("the PDF ends inside an object")
        first = buffer[start]
        if first == 0x2F:  # /
            end = _NAME.match(buffer, start).end()
            return _name(buffer[start + 1 : end]), start, end
        if first == 0x3C:  # <
            if buffer.startswith(b"<<", start):
                return self._dictionary(start, depth)
            return self._match(_HEX_STRING, start, "hex string")
        if first == 0x5B:  # [
            return self._array(start, depth)
        if first == 0x28:  # (
            end = self._literal_end(start)
            return String(buffer[start:end]), start, end
        number = _NUMBER.match(buffer, start)
        if number is not None:
            return self._number(number, start)
        keyword = _KEYWORD.match(buffer, start)
        word = keyword.group() if keyword else buffer[start : start + 1]
        if word in _CONSTANTS:
            return _CONSTANTS[word], start, keyword.end()
        raise CorruptMedia(f"unexpected {word[:20]!r} in a PDF object")

    def _match(self, pattern: re.Pattern, start: int, what: str) -> tuple[String, int, int]:
        found = pattern.match(self.buffer, start)
        if found is None:
            raise CorruptMedia(f"a malformed {what} in a PDF object")
        return String(found.group()), start, found.end()

    def _number(self, number: re.Match, start: int) -> tuple[Any, int, int]:
        token = number.group()
        if len(token) > _MAX_NUMBER_LENGTH:
            raise CorruptMedia("a number in the PDF is too long")
        if b"." in token:
            return float(token), start, number.end()
        reference = _REF_TAIL.match(self.buffer, number.end()) if token.isdigit() else None
        if reference is not None and len(token) <= 10:
            return Ref(int(token), int(reference.group(1))), start, reference.end()
        return int(token), start, number.end()

    def _array(self, start: int, depth: int) -> tuple[list, int, int]:
        items, position = [], start + 1
        while True:
            position = self.skip_space(position)
            if self.buffer.startswith(b"]", position):
                return items, start, position + 1
            item, _, position = self._value(position, depth + 1)
            items.append(item)

    def _dictionary(self, start: int, depth: int) -> tuple[Dictionary, int, int]:
        result, position = Dictionary(self.buffer), start + 2
        while True:
            position = self.skip_space(position)
            if self.buffer.startswith(b">>", position):
                return result, start, position + 2
            key, key_start, key_end = self._value(position, depth + 1)
            if not isinstance(key, Name):
                raise CorruptMedia("a PDF dictionary key is not a name")
            value, value_start, position = self._value(key_end, depth + 1)
            result[key] = value
            result.spans[key] = (key_start, key_end, value_start, position)

    def _literal_end(self, start: int) -> int:
        """End of the literal string at `start`: balanced parentheses, backslash escapes (7.3.4.2)."""
        depth, position = 0, start
        while True:
            special = _LITERAL_SPECIAL.search(self.buffer, position)
            if special is None:
                raise CorruptMedia("a PDF string is not terminated")
            character, position = self.buffer[special.start()], special.end()
            if character == 0x5C:  # backslash: the next byte is escaped
                position += 1
                continue
            depth += 1 if character == 0x28 else -1
            if depth == 0:
                return position


_CONSTANTS = {b"true": True, b"false": False, b"null": None}


def _name(raw: bytes) -> Name:
    return Name(_NAME_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), raw).decode("latin-1"))


def pdf_int(value: Any, what: str) -> int:
    """`value` as a non-negative integer. Raises CorruptMedia naming `what` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CorruptMedia(f"the PDF's {what} is not a non-negative integer")
    return value
