"""MP3: the store travels in a GEOB frame (MIME type `application/c2pa`) of the ID3v2 tag at the start.

As c2pa-rs writes it (mp3_io.rs, id3_helper.rs): a GEOB frame with text encoding 3 (UTF-8), the MIME type
`application/c2pa`, the file name `c2pa`, the description `c2pa manifest store`, then the store. The
exclusion of `c2pa.hash.data` is the store alone: c2pa-rs finds its bytes in the tag (the first place they
occur) and excludes just them, so the tag header (whose size grows with the store), the GEOB frame header
and its text fields are all hashed; `layout` writes them for the planned store size. c2pa-rs rewrites the
whole tag as ID3v2.4; we keep the tag's version, frames, extended header and padding as they are and add
the frame after the last one (a file without a tag gets a v2.4 tag holding only it). A second C2PA GEOB
frame is refused (c2pa-rs: TooManyManifestStores); a compressed or encrypted GEOB is not read as one.
Stripping removes the frame, and the tag when nothing else was in it.
"""

from __future__ import annotations

from media_codecs.audio import id3
from media_codecs.c2pa.carriers.base import MAX_STORE_BYTES, Carrier, Found, Layout
from media_codecs.errors import CorruptMedia, MediaTooLarge


class Id3Carrier(Carrier):
    """A C2PA GEOB frame in the ID3v2 tag a file starts with (MP3; FLAC behind such a tag)."""

    mime_type = "audio/mpeg"

    def tag(self, data: bytes) -> tuple[id3.Tag | None, int]:
        """The leading tag (None without one) and where it ends. Raises CodecError for a bad tag."""
        length = id3.tag_length(bytes(data[: id3.HEADER_BYTES]))
        if length is None:
            return None, 0
        return id3.parse_tag(memoryview(data)[:length]), length

    def find(self, data: bytes) -> Found | None:
        """The store in the C2PA GEOB frame, or None. Raises CodecError for a bad tag or two stores."""
        tag, end = self.tag(data)
        frames = [frame for frame in tag.frames if id3.is_c2pa_store(frame)] if tag else []
        if not frames:
            return None
        if len(frames) > 1:
            raise CorruptMedia("the ID3 tag has two C2PA manifest stores")
        view = id3.c2pa_object(frames[0])
        if len(view) > MAX_STORE_BYTES:
            raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
        store = bytes(view)
        # Where c2pa-rs looks for it: the first place its bytes occur in the tag as stored. Not there at
        # all (an unsynchronised v2.3 tag escapes them), the store covers nothing and its binding fails.
        start = bytes(data[:end]).find(store)
        return Found(store, start, len(store)) if start >= 0 else Found(store, 0, 0)

    def strip(self, data: bytes) -> bytes:
        tag, end = self.tag(data)
        if tag is None:
            return data
        kept = [frame for frame in tag.frames if not id3.is_c2pa_store(frame)]
        if len(kept) == len(tag.frames):
            return data
        rest = memoryview(data)[end:]
        if not kept and not tag.extended and not tag.padding:  # the tag held the store alone: ours
            return bytes(rest)
        return id3.tag_bytes(id3.with_frames(tag, kept)) + rest

    def layout(self, stripped: bytes, store_size: int) -> Layout:
        """The tag with the GEOB frame after its last frame, its size rewritten; the rest as it is."""
        tag, end = self.tag(stripped)
        tag = tag or id3.new_tag()
        frames = [frame.raw for frame in tag.frames]
        geob = id3.c2pa_geob_head(tag, store_size)
        body_size = len(tag.extended) + sum(len(raw) for raw in frames) + len(geob) + store_size + len(tag.padding)
        head = (id3.header_bytes(tag, body_size), tag.extended, *frames, geob)
        tail = (tag.padding, id3.footer_bytes(tag, body_size), memoryview(stripped)[end:])
        return Layout(head, tail, store_size)

    def wrapped(self, store: bytes) -> bytes:
        """The store itself: the frame around it is the layout's (and hashed)."""
        self.check_store_size(len(store))
        return store

    def wrapped_size(self, store_size: int) -> int:
        return store_size


MP3_CARRIER = Id3Carrier()
