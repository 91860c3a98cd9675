"""C2PA manifests in WebP (a `C2PA` RIFF chunk, last): c2pa-python reads what we embed and we read what it
signs; Pillow decodes the same pixels and exiftool still reads our token."""

from __future__ import annotations

import functools
import io
import subprocess

import numpy as np
import pytest
from conftest import XMP_WITH_CREATOR, decoded, encode, exiftool_token, has_exiftool, photo, srgb_profile
from PIL import Image

from media_codecs import CorruptMedia, MediaTooLarge, get_codec
from media_codecs.c2pa import carriers, embed, read_manifest
from media_codecs.c2pa.carriers.base import MAX_STORE_BYTES
from media_codecs.image import webp
from tests import c2pa_formats as checks
from tests.tsa_server import LocalTsa

pytest.importorskip("c2pa")


def _rgba() -> np.ndarray:
    pixels = np.dstack([photo("coffee")[:128, :192], np.full((128, 192), 255, np.uint8)])
    pixels[:40, :40, 3] = 0
    return pixels


def _animated() -> bytes:
    frames = [Image.fromarray(photo("astronaut")[:64, :64] // (i + 1)) for i in range(3)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "WEBP", save_all=True, append_images=frames[1:], duration=100, quality=70)
    return buffer.getvalue()


SAMPLES = {
    "lossy": checks.Sample("webp", "image/webp", functools.cache(
        lambda: encode(photo("astronaut")[:160, :200], "WEBP", quality=80))),
    "lossless-alpha": checks.Sample("webp", "image/webp", functools.cache(
        lambda: encode(_rgba(), "WEBP", lossless=True))),
    "extended": checks.Sample("webp", "image/webp", functools.cache(
        lambda: encode(photo("chelsea")[:120, :160], "WEBP", quality=85, icc_profile=srgb_profile(),
                       xmp=XMP_WITH_CREATOR))),
    "animated": checks.Sample("webp", "image/webp", functools.cache(_animated)),
}
MIME = "image/webp"


@pytest.fixture(scope="module")
def tsa():
    with LocalTsa() as authority:
        yield authority


def _data(name: str) -> bytes:
    return SAMPLES[name].make()


def _fourccs(data: bytes) -> list[bytes]:
    return [chunk.fourcc for chunk in webp.parse_chunks(data)[0]]


@pytest.mark.parametrize("name", ["lossy", "extended"])
def test_a_hybrid_time_stamped_manifest_is_trusted_by_c2pa_python(name: str, tsa) -> None:
    checks.check_trusted_hybrid(SAMPLES[name].signed(), MIME, tsa)


@pytest.mark.parametrize("name", SAMPLES)
def test_an_ml_dsa_manifest_fails_only_the_algorithm(name: str) -> None:
    checks.check_ml_dsa_only(_data(name), MIME)


@pytest.mark.parametrize("name", SAMPLES)
def test_our_reader_verifies_and_strips_back_to_the_input(name: str) -> None:
    checks.check_our_reader(_data(name))


@pytest.mark.parametrize("name", SAMPLES)
def test_the_content_hash_and_the_token_survive_the_store(name: str) -> None:
    checks.check_content_hash_and_token(SAMPLES[name])


@pytest.mark.parametrize("name", SAMPLES)
def test_the_store_is_the_last_chunk_and_pillow_decodes_the_same_pixels(name: str) -> None:
    data = _data(name)
    out = checks.ml_dsa_embedded(data)
    assert _fourccs(out) == [*_fourccs(data), b"C2PA"]  # a simple file stays simple, as c2pa-rs leaves it
    assert int.from_bytes(out[4:8], "little") == len(out) - 8
    image, before = decoded(out), decoded(data)
    assert image.mode == before.mode and np.array_equal(np.asarray(image), np.asarray(before))
    assert get_codec("webp").canvas_size(get_codec("webp").open(out).container) == before.size


@pytest.mark.skipif(not has_exiftool(), reason="exiftool is not installed")
def test_exiftool_reads_our_token_and_no_warning(tmp_path) -> None:
    out = checks.ml_dsa_embedded(SAMPLES["extended"].signed())
    path = tmp_path / "signed.webp"
    path.write_bytes(out)
    assert exiftool_token(str(path)) == checks.TOKEN
    warnings = subprocess.run(["exiftool", "-warning", "-error", "-s", str(path)], capture_output=True, check=True,
                              timeout=600).stdout
    assert warnings == b""


def test_one_changed_image_byte_breaks_the_binding() -> None:
    data = _data("lossy")
    checks.check_flipped_byte(data, MIME, len(data) // 2)  # inside the VP8 bitstream, before the store


def test_embedding_twice_replaces_the_store() -> None:
    checks.check_embedding_twice_replaces(_data("extended"), MIME)


def test_odd_and_even_stores_both_pad_and_read() -> None:
    data, parities = _data("lossless-alpha"), set()
    for length in (40, 41):
        out = embed(data, checks.facts(token="t" * length), checks.ml_dsa_signer())
        found = carriers.carrier_for(out).find(out)
        parities.add(len(found.store) % 2)
        assert found.start + found.length + len(found.store) % 2 == len(out)  # the pad byte ends the file
        assert checks.verify_manifest(out, checks.verify_ml_dsa).is_valid
        assert checks.codes(checks.trusted_report(out, MIME), "failure") == checks.EXPECTED_FAILURES
    assert parities == {0, 1}


@pytest.mark.parametrize("name", ["lossy", "extended"])
def test_a_c2pa_python_signed_webp_is_validated_and_kept_as_parent(name: str) -> None:
    checks.check_upstream(_data(name), MIME)


def test_hostile_stores_raise_codec_errors_only() -> None:
    checks.check_hostile_stores(_data("lossy"), 4)


def _with_chunk(data: bytes, chunk: bytes) -> bytes:
    body = data[12:] + chunk
    return b"RIFF" + (len(body) + 4).to_bytes(4, "little") + b"WEBP" + body


def test_lying_chunks_are_refused() -> None:
    data = _data("lossy")
    store = carriers.carrier_for(out := checks.ml_dsa_embedded(data)).find(out).store
    chunk = b"C2PA" + len(store).to_bytes(4, "little") + store + b"\x00" * (len(store) % 2)
    with pytest.raises(CorruptMedia, match="two"):
        read_manifest(_with_chunk(_with_chunk(data, chunk), chunk))
    for size in (len(store) + 2, 0xFFFFFFFF):
        assert checks.refused(_with_chunk(data, b"C2PA" + size.to_bytes(4, "little") + store))
    with pytest.raises(MediaTooLarge):
        read_manifest(_with_chunk(data, b"C2PA" + (MAX_STORE_BYTES + 2).to_bytes(4, "little")
                                  + bytes(MAX_STORE_BYTES + 2)))
