"""WebM: the Matroska rules (mkv.py) for files whose EBML DocType is `webm`."""

from __future__ import annotations

from media_codecs.video.mkv import MatroskaCodec


class WebmCodec(MatroskaCodec):
    format = "webm"
    mime_type = "video/webm"
    muxer = "webm"
    doc_type = "webm"


CODEC = WebmCodec()
