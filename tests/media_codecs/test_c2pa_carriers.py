"""Which formats carry a C2PA manifest store: a codec capability, asked of the codec (pure: no database)."""

import pytest

from media_codecs import get_codec, registered_codecs
from media_codecs.c2pa import carriers
from media_codecs.c2pa.carriers import bmff, flac, mp3, pdf, riff
from media_codecs.errors import UnsupportedFormat
from tests.media import photo_bytes


def test_the_formats_c2pa_readers_read_carry_a_manifest_store_and_no_other_does():
    carrying = {codec.format: codec.c2pa_carrier for codec in registered_codecs() if codec.c2pa_carrier is not None}
    assert carrying == {"jpeg": carriers.JPEG_CARRIER, "png": carriers.PNG_CARRIER, "webp": riff.WEBP_CARRIER,
                        "wav": riff.WAV_CARRIER, "mp3": mp3.MP3_CARRIER, "flac": flac.FLAC_CARRIER,
                        "pdf": pdf.PDF_CARRIER, "mp4": bmff.BMFF_CARRIER, "mov": bmff.QUICKTIME_CARRIER}


@pytest.mark.parametrize("fmt", ["jpeg", "png", "webp"])
def test_the_carrier_for_a_file_is_its_codecs(fmt):
    assert carriers.carrier_for(photo_bytes("astronaut", fmt)) is get_codec(fmt).c2pa_carrier


@pytest.mark.parametrize("data", [b"plain text", b"<!doctype html><p>hello</p>", b""])
def test_a_file_of_another_format_has_no_carrier(data):
    with pytest.raises(UnsupportedFormat):
        carriers.carrier_for(data)
