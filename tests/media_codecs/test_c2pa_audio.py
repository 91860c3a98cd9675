"""C2PA manifests in WAV (a `C2PA` RIFF chunk), MP3 and FLAC (a GEOB frame in a leading ID3v2 tag): c2pa-python
reads what we embed and we read what it signs; independent tools (ffprobe, mutagen) still read the files."""

from __future__ import annotations

import functools
import io

import pytest
from mutagen import flac as mutagen_flac
from mutagen import id3 as mutagen_id3
from mutagen import mp3 as mutagen_mp3

from media_codecs import CorruptMedia, MediaTooLarge, UnsupportedFormat, get_codec, open_media
from media_codecs.audio import id3
from media_codecs.c2pa import carriers, embed, read_manifest, strip_manifest, validate_upstream
from media_codecs.c2pa.carriers.base import MAX_STORE_BYTES
from tests import audio
from tests import c2pa_formats as checks
from tests.tsa_server import LocalTsa

pytest.importorskip("c2pa")

SAMPLES = {
    "wav-tagged": checks.Sample("wav", "audio/wav", functools.cache(audio.tagged_wav)),
    "wav-plain": checks.Sample("wav", "audio/wav", functools.cache(lambda: audio.wav_bytes(audio.tone(0.3, 8000, 1),
                                                                                           8000))),
    "mp3-id3v24": checks.Sample("mp3", "audio/mpeg", functools.cache(lambda: audio.tagged_mp3(id3v1=True))),
    "mp3-id3v23": checks.Sample("mp3", "audio/mpeg", functools.cache(lambda: audio.tagged_mp3(version=3))),
    "mp3-bare": checks.Sample("mp3", "audio/mpeg", functools.cache(lambda: audio.ffmpeg_mp3(audio.tone(0.5)))),
    "flac-tagged": checks.Sample("flac", "audio/flac", functools.cache(audio.tagged_flac)),
    "flac-plain": checks.Sample("flac", "audio/flac", functools.cache(lambda: audio.flac_bytes(audio.tone(0.3)))),
}
FORMATS = {"wav": "wav-tagged", "mp3": "mp3-id3v24", "flac": "flac-tagged"}
SUFFIX = {"wav": ".wav", "mp3": ".mp3", "flac": ".flac"}


@pytest.fixture(scope="module")
def tsa():
    with LocalTsa() as authority:
        yield authority


def _data(name: str) -> bytes:
    return SAMPLES[name].make()


# -- our manifests, read by c2pa-python and by us ----------------------------------------------------------


@pytest.mark.parametrize("name", FORMATS.values())
def test_a_hybrid_time_stamped_manifest_is_trusted_by_c2pa_python(name: str, tsa) -> None:
    sample = SAMPLES[name]
    checks.check_trusted_hybrid(sample.signed(), sample.mime, tsa)


@pytest.mark.parametrize("name", SAMPLES)
def test_an_ml_dsa_manifest_fails_only_the_algorithm(name: str) -> None:
    checks.check_ml_dsa_only(_data(name), SAMPLES[name].mime)


@pytest.mark.parametrize("name", SAMPLES)
def test_our_reader_verifies_and_strips_back_to_the_input(name: str) -> None:
    checks.check_our_reader(_data(name))


@pytest.mark.parametrize("name", SAMPLES)
def test_the_content_hash_and_the_token_survive_the_store(name: str) -> None:
    out = checks.check_content_hash_and_token(SAMPLES[name])
    codec = SAMPLES[name].codec
    assert codec.stream_info(codec.open(out).container) == codec.stream_info(codec.open(_data(name)).container)


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_changed_audio_byte_breaks_the_binding(fmt: str) -> None:
    data = _data(FORMATS[fmt])
    out = checks.ml_dsa_embedded(data)
    store_start = carriers.carrier_for(out).find(out).start
    position = store_start - 300 if fmt == "wav" else len(out) - 300  # inside the samples or the frames
    checks.check_flipped_byte(data, SAMPLES[FORMATS[fmt]].mime, position)


@pytest.mark.parametrize("fmt", FORMATS)
def test_embedding_twice_replaces_the_store(fmt: str) -> None:
    checks.check_embedding_twice_replaces(_data(FORMATS[fmt]), SAMPLES[FORMATS[fmt]].mime)


@pytest.mark.skipif(not audio.has_ffprobe(), reason="ffprobe is not installed")
@pytest.mark.parametrize("name", SAMPLES)
def test_ffprobe_reads_the_same_stream_and_tags(name: str) -> None:
    sample = SAMPLES[name]
    signed = sample.signed()
    out = checks.ml_dsa_embedded(signed)
    errors, stream = audio.ffprobe(out, SUFFIX[sample.format])
    _, before = audio.ffprobe(signed, SUFFIX[sample.format])
    assert stream and errors == ""
    for key in ("codec_name", "sample_rate", "channels", "duration_ts"):
        assert stream.get(key) == before.get(key)


# -- the RIFF chunk ------------------------------------------------------------------------------------


@pytest.mark.parametrize("token_length", [40, 41])
def test_the_wav_chunk_is_last_and_padded_whatever_the_store_size(token_length: int) -> None:
    """An odd store gets its pad byte; the RIFF size counts it, the exclusion does not (c2pa-rs)."""
    data = _data("wav-tagged")
    sizes = set()
    for length in (token_length, token_length + 1):
        out = embed(data, checks.facts(token="t" * length), checks.ml_dsa_signer())
        chunks = audio.riff_walk(out)
        assert chunks[:-1] == audio.riff_walk(data) and chunks[-1][0] == b"C2PA"
        found = carriers.carrier_for(out).find(out)
        assert found.length == 8 + chunks[-1][1] and out[found.start : found.start + 4] == b"C2PA"
        assert checks.verify_manifest(out, checks.verify_ml_dsa).is_valid
        assert "assertion.dataHash.match" in checks.codes(checks.trusted_report(out, "audio/wav"), "success")
        sizes.add(chunks[-1][1] % 2)
    assert sizes == {0, 1}


def test_a_wav_whose_last_chunk_lacks_its_pad_byte_gets_it_before_the_store() -> None:
    data = audio.wav_bytes(audio.tone(0.2, channels=1))
    unpadded = data + b"odd \x03\x00\x00\x00abc"
    unpadded = unpadded[:4] + (len(unpadded) - 8).to_bytes(4, "little") + unpadded[8:]
    out = checks.ml_dsa_embedded(unpadded)
    assert [fourcc for fourcc, _ in audio.riff_walk(out)] == [b"fmt ", b"data", b"odd ", b"C2PA"]
    assert checks.verify_manifest(out, checks.verify_ml_dsa).is_valid
    assert checks.codes(checks.trusted_report(out, "audio/wav"), "failure") == checks.EXPECTED_FAILURES


def test_bytes_after_the_riff_payload_stay_after_the_store() -> None:
    data = audio.wav_bytes(audio.tone(0.2, 8000, 1), 8000) + b"TRAILER!"
    out = checks.ml_dsa_embedded(data)
    assert out.endswith(b"TRAILER!") and checks.strip_manifest(out) == data
    assert checks.verify_manifest(out, checks.verify_ml_dsa).is_valid
    assert checks.codes(checks.trusted_report(out, "audio/wav"), "failure") == checks.EXPECTED_FAILURES


# -- the ID3 GEOB frame --------------------------------------------------------------------------------


def test_mutagen_reads_the_mp3_tag_with_our_frames_and_the_audio() -> None:
    signed = SAMPLES["mp3-id3v24"].signed()
    out = checks.ml_dsa_embedded(signed)
    tags = mutagen_id3.ID3(io.BytesIO(out))
    geob, = tags.getall("GEOB")
    assert geob.mime == "application/c2pa" and geob.desc == "c2pa manifest store" and geob.filename == "c2pa"
    assert geob.data == carriers.carrier_for(out).find(out).store
    assert str(tags["TIT2"]) == "Test tone" and str(tags["TXXX:svc_token"]) == checks.TOKEN
    assert len(tags.getall("APIC")) == 1
    assert mutagen_mp3.MP3(io.BytesIO(out)).info.length == pytest.approx(
        mutagen_mp3.MP3(io.BytesIO(signed)).info.length)


def test_mutagen_reads_a_flac_behind_the_tag() -> None:
    signed = SAMPLES["flac-tagged"].signed()
    out = checks.ml_dsa_embedded(signed)
    assert out[:3] == b"ID3" and out[id3.tag_length(out[:10]) :].startswith(b"fLaC")
    tags = mutagen_flac.FLAC(io.BytesIO(out))
    assert tags["SVC_TOKEN"] == [checks.TOKEN] and tags["TITLE"] == ["Test tone"] and len(tags.pictures) == 1
    assert tags.info.total_samples == mutagen_flac.FLAC(io.BytesIO(signed)).info.total_samples


def test_the_mp3_exclusion_is_the_store_alone_and_the_tag_keeps_its_version_and_padding() -> None:
    data = _data("mp3-id3v23")
    out = checks.ml_dsa_embedded(data)
    found = carriers.carrier_for(out).find(out)
    assert out[found.start : found.start + found.length] == found.store
    assert out[found.start - len(b"c2pa manifest store\x00") : found.start] == b"c2pa manifest store\x00"
    tag = id3.parse_tag(out[: id3.tag_length(out[:10])])
    before = id3.parse_tag(data[: id3.tag_length(data[:10])])
    assert tag.version == 3 and bytes(tag.padding) == bytes(before.padding)
    assert [f.id for f in tag.frames] == [*(f.id for f in before.frames), b"GEOB"]
    assert tag.frames[-1].data[0] == 0  # ISO-8859-1: v2.3 has no UTF-8
    geob, = mutagen_id3.ID3(io.BytesIO(out)).getall("GEOB")
    assert geob.mime == "application/c2pa" and geob.data == found.store


def test_a_malformed_c2pa_frame_is_still_left_out_of_the_content_hash() -> None:
    data = SAMPLES["mp3-bare"].signed()
    tag = id3.parse_tag(data[: id3.tag_length(data[:10])])
    fields = b"\x03application/c2pa\x00abc"
    broken = id3.Frame(b"GEOB", id3.frame_header(tag, b"GEOB", len(fields)) + fields)
    hostile = id3.tag_bytes(id3.with_frames(tag, [*tag.frames, broken])) + data[id3.tag_length(data[:10]) :]
    with pytest.raises(CorruptMedia):
        read_manifest(hostile)
    codec = get_codec("mp3")
    assert codec.strip_token(hostile) == codec.strip_token(data) and strip_manifest(hostile) == data


@pytest.mark.parametrize("name", ["mp3-bare", "flac-plain"])
def test_a_file_without_a_tag_gains_a_v24_tag_holding_the_store_alone(name: str) -> None:
    data = _data(name)
    out = checks.ml_dsa_embedded(data)
    tag = id3.parse_tag(out[: id3.tag_length(out[:10])])
    assert tag.version == 4 and [f.id for f in tag.frames] == [b"GEOB"]
    assert out.endswith(data) and strip_manifest(out) == data
    assert get_codec(SAMPLES[name].format).strip_token(out) == data


def test_a_flac_with_an_id3_tag_is_detected_as_flac_whatever_the_tag_length() -> None:
    data = _data("flac-plain")
    out = checks.ml_dsa_embedded(data)
    assert id3.tag_length(out[:10]) > 4096  # past the detection head
    assert open_media(out).codec is get_codec("flac")
    assert open_media(audio.with_id3(_data("mp3-bare"))).codec is get_codec("mp3")


# -- upstream manifests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["wav-tagged", "mp3-id3v24", "mp3-bare", "flac-tagged", "flac-plain"])
def test_a_c2pa_python_signed_file_is_validated_and_kept_as_parent(name: str) -> None:
    checks.check_upstream(_data(name), SAMPLES[name].mime)


def test_c2pa_pythons_mp3_store_is_found_where_c2pa_rs_excludes_it() -> None:
    upstream = checks.upstream_file(_data("mp3-id3v24"), "audio/mpeg")
    found = carriers.carrier_for(upstream).find(upstream)
    manifest = read_manifest(upstream)
    exclusion, = manifest.assertions["c2pa.hash.data"]["exclusions"]
    assert (exclusion["start"], exclusion["length"]) == (found.start, found.length)


# -- hostile files -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "seed"), [("wav", 1), ("mp3", 2), ("flac", 3)])
def test_hostile_stores_raise_codec_errors_only(fmt: str, seed: int) -> None:
    checks.check_hostile_stores(_data(FORMATS[fmt]), seed)


def _wav_with_chunk(data: bytes, chunk: bytes, riff_size: int | None = None) -> bytes:
    body = data[12:] + chunk
    return b"RIFF" + (riff_size if riff_size is not None else len(body) + 4).to_bytes(4, "little") + b"WAVE" + body


def test_lying_wav_chunks_are_refused() -> None:
    data, store = _data("wav-plain"), b"\x00\x00\x00\x10jumb" + bytes(8)
    two = _wav_with_chunk(_wav_with_chunk(data, audio.chunk(b"C2PA", store))[:], audio.chunk(b"C2PA", store))
    with pytest.raises(CorruptMedia, match="two"):
        read_manifest(two)
    past_file = _wav_with_chunk(data, b"C2PA" + (10_000).to_bytes(4, "little") + store)
    past_riff = _wav_with_chunk(data, audio.chunk(b"C2PA", store), len(data) - 8 + 4 + 8 + 4)  # ends in the store
    huge = _wav_with_chunk(data, b"C2PA" + (0xFFFFFFFF).to_bytes(4, "little") + store)
    for hostile in (past_file, past_riff, huge):
        assert checks.refused(hostile)
    outside = _wav_with_chunk(data, audio.chunk(b"C2PA", store), len(data) - 8)  # after the RIFF payload
    assert read_manifest(outside) is None and strip_manifest(outside) == outside


def test_a_declared_store_over_the_limit_is_too_large() -> None:
    data = _data("wav-plain")
    big = _wav_with_chunk(data, audio.chunk(b"C2PA", bytes(MAX_STORE_BYTES + 2)))
    with pytest.raises(MediaTooLarge):
        read_manifest(big)
    tag_frames = id3.new_tag()
    geob = id3.c2pa_geob_head(tag_frames, MAX_STORE_BYTES + 1) + bytes(MAX_STORE_BYTES + 1)
    mp3 = id3.tag_bytes(id3.with_frames(tag_frames, [id3.Frame(b"GEOB", geob)])) + _data("mp3-bare")
    with pytest.raises(MediaTooLarge):
        read_manifest(mp3)


def _id3_with(frames: list[bytes], after: bytes, size: int | None = None) -> bytes:
    body = b"".join(frames)
    tag = id3.new_tag()
    return id3.header_bytes(tag, len(body) if size is None else size) + body + after


def _geob(store: bytes, mime: bytes = b"application/c2pa") -> bytes:
    fields = b"\x03" + mime + b"\x00c2pa\x00c2pa manifest store\x00"
    return id3.frame_header(id3.new_tag(), b"GEOB", len(fields) + len(store)) + fields + store


@pytest.mark.parametrize("after", ["mp3-bare", "flac-plain"])
def test_lying_id3_tags_and_frames_are_refused(after: str) -> None:
    audio_bytes = _data(after)
    good = carriers.carrier_for(out := checks.ml_dsa_embedded(audio_bytes)).find(out).store
    two = _id3_with([_geob(good), _geob(good, b"application/x-c2pa-manifest-store")], audio_bytes)
    with pytest.raises(CorruptMedia, match="two"):
        read_manifest(two)
    unterminated = id3.frame_header(id3.new_tag(), b"GEOB", 21) + b"\x03application/c2pa\x00abc"
    past_file = _id3_with([_geob(good)], b"", size=len(_geob(good)) + 100) + audio_bytes[:50]
    assert checks.refused(past_file)  # the tag runs past the end of the file
    with pytest.raises(CorruptMedia, match="terminated"):
        read_manifest(_id3_with([unterminated], audio_bytes))  # no file name / description terminator
    cut = _id3_with([_geob(good)[:-10]], audio_bytes)  # the frame's size runs past the tag: not a frame
    assert read_manifest(cut) is None and strip_manifest(cut) == cut
    moved = _id3_with([_geob(good)], audio_bytes[: len(audio_bytes) // 2])  # the store, but other audio
    assert not checks.verify_manifest(moved, checks.verify_ml_dsa).data_hash_valid


def test_a_flac_carrier_refuses_a_tag_in_front_of_something_else() -> None:
    hostile = _id3_with([_geob(b"\x00" * 16)], b"RIFF" + bytes(40))
    assert carriers.carrier_for(hostile) is carriers.carrier_for(_data("mp3-bare"))  # c2pa-rs reads it as MP3
    with pytest.raises(UnsupportedFormat):
        get_codec("flac").c2pa_carrier.find(hostile)
    assert validate_upstream(_data("flac-plain")) is None
