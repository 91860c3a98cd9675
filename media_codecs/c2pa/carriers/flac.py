"""FLAC: the store travels in a GEOB frame of an ID3v2 tag in front of `fLaC`, as c2pa-rs writes it
(flac_io.rs shares id3_helper.rs with MP3: the same frame, the same exclusion of the store's bytes alone).

FLAC itself has no place c2pa-rs reads (no APPLICATION block), so a FLAC carrying a store starts with an
ID3v2.4 tag, which the FLAC spec discourages but libFLAC, FFmpeg and mutagen skip. c2pa-rs reads the tag,
then wants `fLaC` right after it, and so do we: a tag in front of anything else is refused. Everything
else is the MP3 carrier's (carriers/mp3.py).
"""

from __future__ import annotations

from media_codecs.audio import flac, id3
from media_codecs.c2pa.carriers.mp3 import Id3Carrier
from media_codecs.errors import UnsupportedFormat


class FlacCarrier(Id3Carrier):
    mime_type = "audio/flac"

    def tag(self, data: bytes) -> tuple[id3.Tag | None, int]:
        tag, end = flac.leading_tag(memoryview(data))
        if bytes(data[end : end + len(flac.MAGIC)]) != flac.MAGIC:
            raise UnsupportedFormat("not a FLAC file")
        return tag, end


FLAC_CARRIER = FlacCarrier()
