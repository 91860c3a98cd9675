"""MP4: the token in a top-level `cerv` box, appended after the last top-level box.

Token rule: the `cerv` box is a FullBox (version 0, flags 0) whose payload is the token in ASCII. It
goes after the last top-level box, so no byte before it moves and no `stco`/`co64` chunk offset
changes; a faststart file (moov before mdat) stays faststart. Readers skip top-level boxes they do not
know (ISO/IEC 14496-12, 4.2), as ffprobe and browsers do. `embed_token` removes every top-level
`cerv` box first, then appends ours: re-signing replaces, never stacks. `strip_token` returns the
top-level boxes other than `cerv`, each byte for byte, except that a last box declaring size 0 ("to
the end of the file", which an appended box would otherwise join) gets its real size written in its
size field; that rewrite is part of the bytes `content_hash` covers, so strip(embed(x)) == strip(x).
A `cerv` box anywhere but at the end (behind another box) is removed by `strip_token` too, but
`embed_token` refuses it (UnsupportedFormat) rather than move the boxes behind it.

Disclosure: with one, `embed_token` appends after the `cerv` box a top-level XMP `uuid` box (Adobe's XMP
UUID) whose packet holds the token and the disclosure (media_codecs/xmp.py), which exiftool reads. An XMP
box carrying our token counts as ours like `cerv`: replaced by a re-signing, left out by `strip_token`.

Detection: `ftyp` first, with a major brand of MP4_BRANDS (SCORE_MAGIC), or another major brand with
an MP4 brand among the compatible ones (SCORE_WEAK); QuickTime's `qt  ` is mov.py's. Limits: bmff.py
(structure) and limits.py (streams, size, duration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from media_codecs import xmp
from media_codecs.base import SCORE_MAGIC, SCORE_NONE, SCORE_WEAK, Media
from media_codecs.disclosure import Disclosure
from media_codecs.errors import UnsupportedFormat
from media_codecs.video import bmff
from media_codecs.video.base import VideoCodec, check_token

if TYPE_CHECKING:
    from media_codecs.c2pa.carriers import Carrier

TOKEN_BOX = b"cerv"
XMP_UUID = bytes.fromhex("be7acfcb97a942e89c71999491e3afac")  # XMP in ISO BMFF (XMP Specification Part 3)
_FULL_BOX_HEADER = b"\x00\x00\x00\x00"  # version 0, flags 0
MP4_BRANDS = frozenset({b"isom", b"iso2", b"iso3", b"iso4", b"iso5", b"iso6", b"iso7", b"iso8", b"iso9",
                        b"mp41", b"mp42", b"mp71", b"avc1", b"M4V ", b"M4VH", b"M4VP", b"dash", b"MSNV",
                        b"f4v ", b"XAVC"})
QUICKTIME_BRAND = b"qt  "


def ftyp_brands(head: bytes) -> tuple[bytes, set[bytes]] | None:
    """The major brand and the compatible brands of an `ftyp` box at offset 0, or None."""
    if head[4:8] != b"ftyp" or len(head) < 16:
        return None
    size = int.from_bytes(head[0:4], "big")
    if size < 16 or size % 4:
        return None
    brands = head[16 : min(size, len(head))]
    return head[8:12], {brands[i : i + 4] for i in range(0, len(brands) - 3, 4)}


def token_box(token: str) -> bytes:
    payload = _FULL_BOX_HEADER + check_token(token)
    return (8 + len(payload)).to_bytes(4, "big") + TOKEN_BOX + payload


def disclosure_box(token: str, disclosure: Disclosure) -> bytes:
    """A top-level XMP `uuid` box (Adobe's XMP UUID) whose packet holds the token and the disclosure."""
    packet = xmp.build_packet(token, disclosure)
    return (24 + len(packet)).to_bytes(4, "big") + b"uuid" + XMP_UUID + packet


def is_ours(box: bmff.Box, data: bytes) -> bool:
    """Our `cerv` box, or an XMP `uuid` box carrying our token (the disclosure's)."""
    if box.type == TOKEN_BOX:
        return True
    return (box.type == b"uuid" and bytes(data[box.start + 8 : box.start + 24]) == XMP_UUID
            and xmp.read_token(bytes(data[box.payload_start : box.end])) is not None)


class Mp4Codec(VideoCodec):
    format = "mp4"
    mime_type = "video/mp4"
    discloses_in_metadata = True  # an XMP uuid box after the cerv box
    demuxer = "mov"  # FFmpeg's demuxer for MP4, QuickTime, 3GP and their kin
    muxer = "mp4"
    quicktime: ClassVar[bool] = False

    def score(self, head: bytes) -> int:
        brands = ftyp_brands(head)
        if brands is None:
            return SCORE_NONE
        major, compatible = brands
        if (major == QUICKTIME_BRAND) != self.quicktime:
            return SCORE_NONE
        if self.quicktime or major in MP4_BRANDS:
            return SCORE_MAGIC
        return SCORE_WEAK if compatible & MP4_BRANDS else SCORE_NONE

    def parse(self, data: bytes) -> bmff.Movie:
        return bmff.parse_movie(data)

    @property
    def c2pa_carrier(self) -> Carrier:
        """A `uuid` box after `ftyp`, bound with `c2pa.hash.bmff.v3` (media_codecs/c2pa/carriers/bmff.py)."""
        from media_codecs.c2pa.carriers import bmff as carrier  # the C2PA package loads on first use

        return carrier.QUICKTIME_CARRIER if self.quicktime else carrier.BMFF_CARRIER

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Append a `cerv` box carrying `token` after the last top-level box, replacing ours, and with a
        disclosure an XMP `uuid` box after it (the token and the disclosure, media_codecs/xmp.py).

        Raises UnsupportedFormat (a `cerv` box behind another box), CorruptMedia, MediaTooLarge;
        ValueError for a bad token.
        """
        box = token_box(token) + (b"" if disclosure is None else disclosure_box(token, disclosure))
        media = self.media(content)
        movie, data = media.container, media.data
        ours = [is_ours(top, data) for top in movie.boxes]
        trailing = len(ours)
        while trailing and ours[trailing - 1]:
            trailing -= 1
        if any(ours[:trailing]):
            raise UnsupportedFormat("the file has a cerv box before other boxes; it cannot be re-signed in place")
        return b"".join(self._without_token(movie, data, ours)) + box

    @staticmethod
    def _without_token(movie: bmff.Movie, data: bytes, ours: list[bool]) -> list[bytes | memoryview]:
        """The top-level boxes but ours (`ours[i]` for box i), a size-0 last box given its real size; a C2PA box
        stays."""
        view = memoryview(data)
        parts: list[bytes | memoryview] = []
        for box, is_our_box in zip(movie.boxes, ours, strict=True):
            if is_our_box:
                continue
            if box.declared_to_end:
                if box.end - box.start > 0xFFFFFFFF:
                    raise UnsupportedFormat("a last box of size 0 is too large to be given its real 32-bit size")
                parts += [(box.end - box.start).to_bytes(4, "big"), view[box.start + 4 : box.end]]
            else:
                parts.append(view[box.start : box.end])
        return parts

    def extract_token(self, content: bytes | Media) -> str | None:
        """The token of the last top-level `cerv` box. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        media = self.media(content)
        ours = bmff.find(list(media.container.boxes), TOKEN_BOX)
        if not ours:
            return None
        payload = media.data[ours[-1].payload_start : ours[-1].end]
        if not payload.startswith(_FULL_BOX_HEADER):
            return None
        return payload[len(_FULL_BOX_HEADER) :].decode("ascii", "replace") or None

    def strip_token(self, content: bytes | Media) -> bytes:
        """The top-level boxes without `cerv` (nor a C2PA manifest box), a size-0 last box given its real size
        (module docstring)."""
        return b"".join(self.hashed_parts(content))

    def hashed_parts(self, content: bytes | Media) -> list[bytes | memoryview]:
        """`strip_token`'s bytes as views into the file (and a rewritten size). A C2PA manifest box goes too,
        with the chunk offsets it moved moved back (fresh bytes for those tables alone), so embedding a
        manifest (`POST /v1/records/:id/c2pa/embed`) keeps the content hash."""
        media = self.media(content)
        from media_codecs.c2pa.carriers import bmff as carrier  # the C2PA package loads on first use

        kept, _ = carrier.stripped_boxes(media.data, real_size=True)
        return [piece for box, pieces in kept if not is_ours(box, media.data) for piece in pieces]


CODEC = Mp4Codec()
