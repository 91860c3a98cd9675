"""Matroska (MKV): the token in a sentinel trailer, an EBML Void element after the Segment.

Token rule: the trailer is a top-level Void element (ID 0xEC, RFC 8794 11.3.2: readers skip it at any
level) with an 8-byte size and the data SENTINEL + the token in ASCII, appended after the last
top-level element. Nothing inside the Segment moves, so every SeekHead and Cues position (relative
to the Segment's data) still holds; ffprobe and players skip it. `embed_token` removes every
top-level Void element whose data starts with SENTINEL, then appends ours: re-signing replaces,
never stacks. `strip_token` returns the top-level elements other than ours, byte for byte: the bytes
`content_hash` covers, so strip(embed(x)) == strip(x). A Void of ours inside the Segment is content.

Detection: the EBML header's DocType, `matroska` here and `webm` in webm.py. Limits: ebml.py
(structure, unknown sizes) and limits.py (streams, size, duration).
"""

from __future__ import annotations

from typing import ClassVar

from media_codecs.base import SCORE_MAGIC, SCORE_NONE, Media
from media_codecs.disclosure import Disclosure
from media_codecs.errors import CodecError, CorruptMedia, UnsupportedFormat
from media_codecs.video import ebml
from media_codecs.video.base import VideoCodec, check_token

SENTINEL = b"cerv:svc-token\x00"
_EBML_MAGIC = ebml.EBML_ID.to_bytes(4, "big")


def trailer(token: str) -> bytes:
    payload = SENTINEL + check_token(token)
    return bytes([ebml.VOID_ID]) + (len(payload) | 1 << 56).to_bytes(8, "big") + payload


def head_doc_type(head: bytes) -> str | None:
    """The DocType of an EBML header at offset 0 of `head`, or None. Never raises."""
    if not head.startswith(_EBML_MAGIC):
        return None
    try:
        return ebml.header_doc_type(head, _header(head))
    except CodecError:
        return None


def _header(head: bytes) -> ebml.Element:
    _, after_id = ebml.read_id(head, 0, len(head))
    size, data_start = ebml.read_size(head, after_id, len(head))
    if size is None or data_start + size > len(head):
        raise CorruptMedia("the EBML header does not fit the head")
    return ebml.Element(ebml.EBML_ID, 0, data_start, data_start + size)


class MatroskaCodec(VideoCodec):
    format = "mkv"
    mime_type = "video/x-matroska"
    demuxer = "matroska"  # FFmpeg's demuxer for Matroska and WebM
    muxer = "matroska"
    doc_type: ClassVar[str] = "matroska"

    def score(self, head: bytes) -> int:
        return SCORE_MAGIC if head_doc_type(head) == self.doc_type else SCORE_NONE

    def parse(self, data: bytes) -> ebml.MatroskaFile:
        matroska = ebml.parse_matroska(data)
        if matroska.doc_type != self.doc_type:
            raise UnsupportedFormat(f"the EBML DocType is {matroska.doc_type!r}, not {self.doc_type!r}")
        return matroska

    def _ours(self, media: Media) -> list[ebml.Element]:
        return [element for element in media.container.elements if element.id == ebml.VOID_ID
                and media.data[element.data_start : element.data_start + len(SENTINEL)] == SENTINEL]

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Append the trailer carrying `token` after the last top-level element, replacing ours.

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge; ValueError for a bad token.
        """
        return self.strip_token(content) + trailer(token)

    def extract_token(self, content: bytes | Media) -> str | None:
        """The token of the last trailer of ours. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        media = self.media(content)
        ours = self._ours(media)
        if not ours:
            return None
        value = media.data[ours[-1].data_start + len(SENTINEL) : ours[-1].end]
        return value.decode("ascii", "replace") or None

    def strip_token(self, content: bytes | Media) -> bytes:
        """The top-level elements without our trailers, byte for byte."""
        return b"".join(self.hashed_parts(content))

    def hashed_parts(self, content: bytes | Media) -> list[bytes | memoryview]:
        """`strip_token`'s bytes as views into the file."""
        media = self.media(content)
        ours = {element.start for element in self._ours(media)}
        view = memoryview(media.data)
        return [view[element.start : element.end] for element in media.container.elements
                if element.start not in ours]


CODEC = MatroskaCodec()
