from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import OTHER_TOKEN, TOKEN
from mutagen import id3 as mutagen_id3
from mutagen.wave import WAVE

from media_codecs import CorruptMedia, MediaTooLarge, UnsupportedFormat, detect, open_media
from media_codecs.audio import base
from media_codecs.audio.wav import CODEC, MAX_CHUNKS
from tests import audio
from tests import hostile_media as hm

LAYOUTS = [  # (bits, float, extensible, channels, rate)
    (8, False, False, 1, 8_000),
    (16, False, False, 1, 22_050),
    (16, False, False, 2, 44_100),
    (24, False, False, 2, 48_000),
    (24, False, True, 6, 96_000),
    (32, False, False, 2, 44_100),
    (16, False, True, 8, 192_000),
    (32, True, False, 2, 48_000),
    (64, True, True, 1, 44_100),
]


def _wav(bits, is_float, extensible, channels, rate) -> tuple[bytes, np.ndarray]:
    samples = audio.noise(0.05, rate, channels)
    return audio.wav_bytes(samples, rate, bits, is_float=is_float, extensible=extensible), samples


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: "{}{}{}-{}ch-{}".format(*layout))
def test_each_supported_layout_decodes_signs_and_reencodes_exactly(layout) -> None:
    data, samples = _wav(*layout)
    bits, is_float, _, channels, rate = layout
    media = open_media(data)
    assert media.codec is CODEC
    assert CODEC.info(media) == base.StreamInfo(rate, channels, len(samples), bits)
    decoded, decoded_rate = CODEC.samples(media)
    assert decoded_rate == rate and decoded.shape == samples.shape and decoded.dtype == np.float64
    step = 2.0**-24 if is_float else 1 / (1 << (bits - 1))  # float32's precision near 1, or one PCM step
    assert np.abs(decoded - samples).max() <= step
    assert CODEC.reencode(media, decoded) == data  # unchanged samples: the same bytes
    signed = CODEC.embed_token(data, TOKEN)
    audio.riff_walk(signed)
    assert CODEC.extract_token(signed) == TOKEN and CODEC.strip_token(signed) == data


def test_the_token_is_an_svct_chunk_before_data_and_every_other_chunk_is_kept_in_order() -> None:
    original = audio.tagged_wav()
    signed = CODEC.embed_token(original, TOKEN)
    assert [chunk_id for chunk_id, _ in audio.riff_walk(signed)] == [
        b"fmt ", b"LIST", b"junk", b"svct", b"data", b"odd ", b"cue "]
    assert audio.chunk_bytes(signed, b"svct") == b"svct" + len(TOKEN).to_bytes(4, "little") + TOKEN.encode() + b"\x00"
    for chunk_id in (b"fmt ", b"LIST", b"junk", b"data", b"odd ", b"cue "):
        assert audio.chunk_bytes(signed, chunk_id) == audio.chunk_bytes(original, chunk_id)


def test_embedding_again_replaces_the_token_and_strip_does_not_depend_on_it() -> None:
    original = audio.tagged_wav()
    signed = CODEC.embed_token(CODEC.embed_token(original, OTHER_TOKEN), TOKEN)
    assert [chunk_id for chunk_id, _ in audio.riff_walk(signed)].count(b"svct") == 1
    assert CODEC.extract_token(signed) == TOKEN
    assert CODEC.strip_token(signed) == CODEC.strip_token(CODEC.embed_token(original, OTHER_TOKEN)) == original


def test_a_missing_last_pad_byte_is_restored() -> None:
    valid = audio.wav_bytes(audio.tone(0.01), after=(audio.chunk(b"odd ", b"abc"),))
    unpadded = b"RIFF" + (len(valid) - 9).to_bytes(4, "little") + valid[8:-1]
    assert CODEC.strip_token(unpadded) == valid
    audio.riff_walk(CODEC.embed_token(unpadded, TOKEN))


def test_bytes_after_the_riff_payload_are_kept() -> None:
    data = audio.wav_bytes(audio.tone(0.01)) + b"trailing junk"
    signed = CODEC.embed_token(data, TOKEN)
    assert signed.endswith(b"trailing junk") and CODEC.strip_token(signed) == data


def test_an_id3_chunk_survives_and_mutagen_reads_the_signed_file() -> None:
    tags = mutagen_id3.ID3()
    tags.add(mutagen_id3.TIT2(encoding=3, text="Tone"))
    buffer = io.BytesIO()
    tags.save(buffer)
    data = audio.wav_bytes(audio.tone(1.0), after=(audio.chunk(b"id3 ", buffer.getvalue()),))
    read = WAVE(io.BytesIO(CODEC.embed_token(data, TOKEN)))
    assert str(read.tags["TIT2"]) == "Tone"
    assert read.info.length == pytest.approx(1.0) and read.info.channels == 2 and read.info.sample_rate == 44_100


def test_reencoding_keeps_the_format_and_metadata_with_new_samples() -> None:
    original = CODEC.embed_token(audio.tagged_wav(bits=24), TOKEN)
    media = CODEC.open(original)
    samples, _ = CODEC.samples(media)
    changed = CODEC.reencode(media, samples * 0.5)
    audio.riff_walk(changed)
    assert CODEC.extract_token(changed) == TOKEN
    assert audio.chunk_bytes(changed, b"LIST") == audio.chunk_bytes(original, b"LIST")
    assert audio.chunk_bytes(changed, b"fmt ") == audio.chunk_bytes(original, b"fmt ")
    assert np.abs(CODEC.samples(changed)[0] - samples * 0.5).max() <= 2**-23


def test_samples_are_decoded_once_per_media_and_read_only() -> None:
    media = CODEC.open(audio.tagged_wav())
    first, _ = CODEC.samples(media)
    assert CODEC.samples(media)[0] is first and not first.flags.writeable


def test_reencode_refuses_samples_of_another_layout() -> None:
    media = CODEC.open(audio.tagged_wav())
    with pytest.raises(ValueError):
        CODEC.reencode(media, np.zeros((100, 1)))
    with pytest.raises(ValueError):
        CODEC.reencode(media, np.full((100, 2), np.nan))


@pytest.mark.skipif(not audio.has_ffprobe(), reason="ffprobe is not installed")
@pytest.mark.parametrize("layout", [LAYOUTS[2], LAYOUTS[3], LAYOUTS[4]], ids=["16", "24", "24-extensible"])
def test_ffprobe_reads_the_signed_file_without_errors(layout) -> None:
    data, _ = _wav(*layout)
    errors, stream = audio.ffprobe(CODEC.embed_token(data, TOKEN), ".wav")
    assert errors == ""
    assert (stream["channels"], int(stream["sample_rate"])) == (layout[3], layout[4])
    assert int(stream["bits_per_sample"]) == layout[0]


# --- limits and hostile files ------------------------------------------------------------------------

def _body(*chunks: bytes) -> bytes:
    body = b"WAVE" + b"".join(chunks)
    return b"RIFF" + len(body).to_bytes(4, "little") + body


FMT = audio.chunk(b"fmt ", audio.fmt_payload(2, 44_100, 16))
DATA = audio.chunk(b"data", bytes(400))


@pytest.mark.parametrize(("data", "error"), [
    (_body(FMT), CorruptMedia),  # no data
    (_body(DATA), CorruptMedia),  # no fmt
    (_body(FMT, DATA, DATA), CorruptMedia),
    (_body(FMT, audio.chunk(b"data", b"")), CorruptMedia),  # zero-length data
    (_body(FMT, b"data\xff\xff\xff\xff" + bytes(400)), CorruptMedia),  # streaming size, 4 GB
    (_body(FMT, b"data" + (10_000).to_bytes(4, "little") + bytes(400)), CorruptMedia),  # data past the end
    (_body(audio.chunk(b"fmt ", bytes(8)), DATA), CorruptMedia),  # truncated fmt
    (_body(audio.chunk(b"fmt ", audio.fmt_payload(2, 44_100, 16)[:12] + b"\x03\x00\x10\x00"), DATA), CorruptMedia),
    (_body(audio.chunk(b"fmt ", b"\x02\x00" + audio.fmt_payload(2, 44_100, 16)[2:]), DATA), UnsupportedFormat),
    (_body(audio.chunk(b"fmt ", audio.fmt_payload(2, 44_100, 12)), DATA), UnsupportedFormat),
    (_body(audio.chunk(b"fmt ", audio.fmt_payload(9, 44_100, 16)), audio.chunk(b"data", bytes(180))), MediaTooLarge),
    (_body(audio.chunk(b"fmt ", audio.fmt_payload(1, 384_000, 16)), DATA), MediaTooLarge),
    (_body(audio.chunk(b"fmt ", audio.fmt_payload(1, 4_000, 16)), DATA), UnsupportedFormat),
    (_body(audio.chunk(b"fmt ", audio.fmt_payload(1, 0, 16)), DATA), CorruptMedia),
    (_body(FMT, DATA)[:-100], CorruptMedia),  # truncated: the RIFF size runs past the end
    (_body(FMT, DATA) + b"", None),
    (b"RF64\xff\xff\xff\xffWAVEds64" + bytes(28), UnsupportedFormat),
], ids=["no-data", "no-fmt", "two-data", "empty-data", "data-4GB", "data-past-end", "short-fmt",
        "block-align-lies", "adpcm", "12-bit", "9-channels", "384kHz", "4kHz", "0Hz", "truncated", "valid", "rf64"])
def test_malformed_and_out_of_limit_files_are_refused_by_the_parser(data: bytes, error) -> None:
    assert detect(data) is CODEC
    if error is None:
        CODEC.open(data)
        return
    with pytest.raises(error):
        CODEC.open(data)


def test_more_than_twenty_minutes_is_too_large_before_decoding() -> None:
    data = hm.wav_longer_than(base.MAX_SECONDS + 1)
    with pytest.raises(MediaTooLarge, match="seconds"):
        CODEC.open(data)


def test_many_empty_chunks_are_too_large() -> None:
    data = hm.wav_with_empty_chunks(MAX_CHUNKS + 1)
    with pytest.raises(MediaTooLarge, match="chunks"):
        open_media(data)


def test_decoding_past_the_sample_budget_is_refused_from_the_header(monkeypatch) -> None:
    monkeypatch.setattr(base, "MAX_DECODED_SAMPLES", 1_000)
    media = CODEC.open(audio.wav_bytes(audio.tone(0.1)))
    with pytest.raises(MediaTooLarge):
        CODEC.samples(media)
