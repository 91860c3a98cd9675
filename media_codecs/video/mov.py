"""QuickTime (MOV): the MP4 rules (mp4.py) for files whose `ftyp` major brand is `qt  `.

QuickTime files without an `ftyp` box (before 2001) are not recognised.
"""

from __future__ import annotations

from media_codecs.video.mp4 import Mp4Codec


class MovCodec(Mp4Codec):
    format = "mov"
    mime_type = "video/quicktime"
    muxer = "mov"
    quicktime = True


CODEC = MovCodec()
