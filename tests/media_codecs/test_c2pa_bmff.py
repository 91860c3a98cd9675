"""C2PA manifests in MP4 and QuickTime: a `uuid` box after `ftyp`, chunk offsets moved, `c2pa.hash.bmff.v3`;
c2pa-python reads what we embed, we read what it embeds, ffprobe/ffmpeg still play the file."""

from __future__ import annotations

import datetime
import functools
import shutil
import subprocess
import tempfile

import pytest

from media_codecs import CodecError, CorruptMedia, MediaTooLarge, UnsupportedFormat, get_codec
from media_codecs.c2pa import (
    ManifestFacts,
    carriers,
    embed,
    read_manifest,
    strip_manifest,
    verify_manifest,
)
from media_codecs.c2pa.carriers.bmff import BINDING_LABEL, BMFF_CARRIER, C2PA_UUID, QUICKTIME_CARRIER
from media_codecs.c2pa.reading import check_manifest
from media_codecs.c2pa.upstream import upstream_from_store, validate_upstream
from media_codecs.video import bmff
from record_format.hashing import content_hash_of_media
from tests import video
from tests.media_codecs.conftest import TOKEN

c2pa = pytest.importorskip("c2pa")

from tests import c2pa_signers  # noqa: E402
from tests.c2pa_signers import codes, hybrid_signer, ml_dsa_signer, trusted_report, tsa_stamper  # noqa: E402
from tests.c2pa_upstream import c2pa_report, c2pa_sign, hostile_stores  # noqa: E402
from tests.tsa_server import LocalTsa  # noqa: E402

MIMES = {"mp4": "video/mp4", "mov": "video/quicktime"}
VARIANTS = {"plain": {"audio": True}, "faststart": {"faststart": True}}
ML_DSA_FAILURES = ["algorithm.unsupported", "claimSignature.mismatch"]
MOMENT = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _facts(**changes: object) -> ManifestFacts:
    values = {"record_id": "rec_0123", "model": "video-model-3", "generator_id": "gen_42", "kid": "test-kid",
              "token": TOKEN, "certificate_chain": (), "created_at": "2026-01-01T00:00:00Z"}
    return ManifestFacts(**{**values, **changes})


@functools.cache
def _signed(fmt: str, variant: str = "plain") -> bytes:
    """A short clip carrying our token (as the service signs it)."""
    return get_codec(fmt).embed_token(video.sample(fmt, seconds=1, **VARIANTS[variant]), TOKEN)


@functools.cache
def _embedded(fmt: str, variant: str = "plain") -> bytes:
    return embed(_signed(fmt, variant), _facts(), ml_dsa_signer())


def _verify_ml_dsa(message: bytes, signature: bytes) -> bool:
    try:
        c2pa_signers.signing_ca()["ml_dsa_key"].public_key().verify(signature, message)
    except Exception:
        return False
    return True


def _boxes(data: bytes) -> list[bmff.Box]:
    return bmff.read_boxes(data, 0, len(data), top_level=True, limit=1000)


def _mdat_byte(data: bytes) -> int:
    """An offset in the middle of the media data."""
    mdat, = [box for box in _boxes(data) if box.type == b"mdat"]
    return (mdat.payload_start + mdat.end) // 2


@pytest.fixture(scope="module")
def tsa():
    with LocalTsa() as authority:
        yield authority


# -- c2pa-python reads ours ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", MIMES)
def test_a_hybrid_time_stamped_manifest_is_trusted_by_c2pa_python(fmt: str, tsa) -> None:
    out = embed(_signed(fmt), _facts(), hybrid_signer(tsa_stamper(tsa.url)))
    report = trusted_report(out, MIMES[fmt], [tsa.root])
    assert report["validation_state"] == "Trusted"
    assert codes(report, "failure") == []
    success = codes(report, "success")
    assert {"assertion.bmffHash.match", "timeStamp.validated", "timeStamp.trusted"} <= set(success)
    assert "assertion.bmffHash.mismatch" not in codes(report, "failure")


@pytest.mark.parametrize("fmt", MIMES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_an_ml_dsa_manifest_fails_only_on_the_algorithm_and_the_binding_matches(fmt: str, variant: str) -> None:
    report = trusted_report(_embedded(fmt, variant), MIMES[fmt])
    assert codes(report, "failure") == ML_DSA_FAILURES
    assert "assertion.bmffHash.match" in codes(report, "success")


@pytest.mark.parametrize("fmt", MIMES)
def test_the_store_goes_in_a_c2pa_uuid_box_after_ftyp(fmt: str) -> None:
    out = _embedded(fmt)
    boxes = _boxes(out)
    assert boxes[0].type == b"ftyp" and boxes[1].type == b"uuid" and boxes[-1].type == b"cerv"
    header = out[boxes[1].start + 8 : boxes[1].start + 45]
    assert header == C2PA_UUID + bytes(4) + b"manifest\x00" + bytes(8)
    carrier = carriers.carrier_for(out)
    assert carrier is (BMFF_CARRIER if fmt == "mp4" else QUICKTIME_CARRIER)
    assert carrier.mime_type == MIMES[fmt]


# -- our reader ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", MIMES)
def test_our_reader_verifies_the_signature_the_bmff_hash_and_the_assertions(fmt: str) -> None:
    out = _embedded(fmt)
    manifest = read_manifest(out)
    assert manifest is not None and manifest.provenance["token"] == TOKEN
    assert BINDING_LABEL in manifest.assertions
    verification = check_manifest(out, manifest, _verify_ml_dsa)
    assert verification.data_hash_valid and verification.signature_valid
    assert verification.assertion_hashes and all(verification.assertion_hashes.values())


@pytest.mark.parametrize("fmt", MIMES)
def test_one_changed_media_byte_breaks_the_binding_for_us_and_for_c2pa_python(fmt: str) -> None:
    out = bytearray(_embedded(fmt))
    out[_mdat_byte(bytes(out))] ^= 0x01
    out = bytes(out)
    assert not verify_manifest(out, _verify_ml_dsa).data_hash_valid
    assert "assertion.bmffHash.mismatch" in codes(trusted_report(out, MIMES[fmt]), "failure")


def test_moving_a_box_breaks_the_binding_though_its_bytes_stay() -> None:
    """v2/v3 hash each box's offset: a `free` box slipped in before mdat (offsets fixed up) is caught."""
    out = _embedded("mp4")
    manifest = read_manifest(out)
    boxes = _boxes(out)
    moved = out[: boxes[2].start] + b"\x00\x00\x00\x08free" + out[boxes[2].start :]
    assert not BMFF_CARRIER.binding_matches(moved, carriers.Found(b"", manifest.store_start,
                                                                  manifest.store_length),
                                            manifest.assertions[BINDING_LABEL], "sha256")


@pytest.mark.parametrize("fmt", MIMES)
def test_embedding_twice_replaces_and_stripping_gives_back_the_input(fmt: str) -> None:
    signed = _signed(fmt)
    twice = embed(_embedded(fmt), _facts(record_id="rec_other"), ml_dsa_signer())
    assert [box.type for box in _boxes(twice)].count(b"uuid") == 1
    assert read_manifest(twice).provenance["record_id"] == "rec_other"
    assert verify_manifest(twice, _verify_ml_dsa).is_valid
    assert strip_manifest(twice) == signed and strip_manifest(_embedded(fmt)) == signed
    assert strip_manifest(signed) is signed


@pytest.mark.parametrize("fmt", MIMES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_content_hash_and_the_token_survive_embedding(fmt: str, variant: str) -> None:
    codec = get_codec(fmt)
    signed, out = _signed(fmt, variant), _embedded(fmt, variant)
    assert content_hash_of_media(codec.open(out)) == content_hash_of_media(codec.open(signed))
    assert codec.strip_token(out) == codec.strip_token(signed)
    assert all(isinstance(part, memoryview) or len(part) < 64 * 1024 for part in codec.hashed_parts(out))
    assert codec.extract_token(out) == TOKEN
    assert codec.info(out) == codec.info(signed)


@pytest.mark.skipif(not video.has_ffprobe() or not shutil.which("ffmpeg"), reason="ffprobe/ffmpeg missing")
@pytest.mark.parametrize("fmt", MIMES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_ffprobe_and_ffmpeg_read_the_output_as_the_input(fmt: str, variant: str) -> None:
    signed, out = _signed(fmt, variant), _embedded(fmt, variant)
    before, after = video.ffprobe(signed, fmt), video.ffprobe(out, fmt)
    assert after["format"]["duration"] == before["format"]["duration"]
    assert [(s["codec_name"], s.get("width"), s.get("nb_frames")) for s in after["streams"]] == \
           [(s["codec_name"], s.get("width"), s.get("nb_frames")) for s in before["streams"]]
    assert video.ffprobe_errors(out, fmt) == ""
    with tempfile.NamedTemporaryFile(suffix=f".{fmt}") as file:
        file.write(out)
        file.flush()
        played = subprocess.run(["ffmpeg", "-v", "error", "-i", file.name, "-f", "null", "-"], capture_output=True,
                                timeout=120)
    assert played.returncode == 0 and played.stdout == b"" and played.stderr == b""


def test_co64_offsets_move_too() -> None:
    signed = _with_co64(_signed("mp4"))
    assert b"co64" in signed and b"stco" not in signed
    out = embed(signed, _facts(), ml_dsa_signer())
    assert strip_manifest(out) == signed
    assert "assertion.bmffHash.match" in codes(trusted_report(out, "video/mp4"), "success")
    if video.has_ffprobe():
        assert video.ffprobe_errors(out, "mp4") == ""


def _with_co64(data: bytes) -> bytes:
    """The file with every stco table written as co64 (moov last, so no chunk moves)."""
    def wide(count: bytes, entries: bytes) -> tuple[bytes, bytes]:
        return b"co64", count + b"".join(bytes(4) + entries[i : i + 4] for i in range(0, len(entries), 4))
    return _rewrite_stco(data, wide)


def _rewrite_stco(data: bytes, rewrite_table) -> bytes:
    """The file with each stco box replaced by rewrite_table(count, entries) -> (type, payload after the
    version and flags); moov must come after mdat, so no chunk moves."""
    boxes = _boxes(data)
    moov, = [box for box in boxes if box.type == b"moov"]
    assert boxes.index(moov) > [box.type for box in boxes].index(b"mdat")

    def rewrite(start: int, end: int) -> bytes:
        out = b""
        for box in bmff.read_boxes(data, start, end, top_level=False, limit=1000):
            if box.type in (b"trak", b"mdia", b"minf", b"stbl"):
                out += _box(box.type, rewrite(box.payload_start, box.end))
            elif box.type == b"stco":
                count = data[box.payload_start + 4 : box.payload_start + 8]
                entries = data[box.payload_start + 8 : box.payload_start + 8 + 4 * int.from_bytes(count, "big")]
                kind, payload = rewrite_table(count, entries)
                out += _box(kind, data[box.payload_start : box.payload_start + 4] + payload)
            else:
                out += data[box.start : box.end]
        return out

    return data[: moov.start] + _box(b"moov", rewrite(moov.payload_start, moov.end)) + data[moov.end :]


def test_layout_copies_only_the_offset_tables() -> None:
    stripped = _signed("mp4")
    layout = BMFF_CARRIER.layout(stripped, 20_000)
    fresh = [piece for piece in (*layout.head, *layout.tail) if not isinstance(piece, memoryview)]
    assert sum(len(piece) for piece in fresh) < 4_096  # the stco tables of a 1 s clip
    mdat, = [box for box in _boxes(stripped) if box.type == b"mdat"]
    assert any(isinstance(piece, memoryview) and piece.obj is stripped and len(piece) >= mdat.end - mdat.start
               for piece in layout.tail)


def test_a_table_of_more_chunks_than_samples_allowed_is_too_large() -> None:
    many = 700_000  # past limits.MAX_SAMPLES
    out = _rewrite_stco(_embedded("mp4"), lambda count, entries: (
        b"stco", many.to_bytes(4, "big") + entries[:4] * many))
    with pytest.raises(MediaTooLarge):
        BMFF_CARRIER.strip(out)


def test_many_exclusions_over_many_boxes_stay_bounded() -> None:
    out = _insert_after_ftyp(_embedded("mp4"), _box(b"skip", b"") * 4_000)
    manifest = read_manifest(out)
    found = carriers.Found(b"", manifest.store_start, manifest.store_length)
    content = {**manifest.assertions[BINDING_LABEL], "exclusions": [{"xpath": "/skip"}] * 64}
    assert BMFF_CARRIER.binding_matches(out, found, content, "sha256") is False


# -- c2pa-rs's files -----------------------------------------------------------------------------------


@functools.cache
def _upstream(fmt: str) -> bytes:
    return c2pa_sign(video.sample(fmt, seconds=1), MIMES[fmt])


@pytest.mark.parametrize("fmt", MIMES)
def test_our_layout_of_a_c2pa_rs_store_is_the_file_c2pa_rs_wrote(fmt: str) -> None:
    upstream = _upstream(fmt)
    carrier = carriers.carrier_for(upstream)
    found = carrier.find(upstream)
    stripped = carrier.strip(upstream)
    assert stripped == video.sample(fmt, seconds=1)
    layout = carrier.layout(stripped, len(found.store))
    assert layout.join(carrier.wrapped(found.store)) == upstream
    theirs = read_manifest(upstream).assertions[BINDING_LABEL]
    assert carrier.binding(layout) == theirs  # exclusions, alg, hash and name, in their CBOR shape


@pytest.mark.parametrize("fmt", MIMES)
def test_validation_of_a_c2pa_rs_file_matches_c2pa_python(fmt: str) -> None:
    upstream = _upstream(fmt)
    found = validate_upstream(upstream)
    report = c2pa_report(upstream, MIMES[fmt])

    def statuses(results: dict) -> set[tuple[str, str, str]]:
        return {(kind, s["code"], s["url"]) for kind, items in results["activeManifest"].items()
                if kind in ("success", "informational", "failure") for s in items}

    ours, theirs = statuses(found.validation_results), statuses(report["validation_results"])
    assert ours == theirs  # the informational note on BMFF's extra exclusions included
    assert "assertion.bmffHash.match" in {code for kind, code, _ in ours if kind == "success"}
    assert found.is_valid and found.format == MIMES[fmt]


@pytest.mark.parametrize("fmt", MIMES)
def test_an_upstream_manifest_becomes_our_parent_ingredient(fmt: str) -> None:
    upstream = _upstream(fmt)
    found = validate_upstream(upstream, at=MOMENT + datetime.timedelta(days=30))
    parent = upstream_from_store(found.store, format=found.format, validation_results=found.validation_results)
    signed = get_codec(fmt).embed_token(strip_manifest(upstream), TOKEN)
    for kept in (parent, found):
        out = embed(signed, _facts(), ml_dsa_signer(), parent=kept)
        report = c2pa_report(out, MIMES[fmt])
        assert codes(report, "failure") == ML_DSA_FAILURES
        assert "assertion.bmffHash.match" in codes(report, "success")
        ours = report["active_manifest"]
        ingredient, = report["manifests"][ours]["ingredients"]
        assert ingredient["relationship"] == "parentOf" and ingredient["active_manifest"] == found.label
        assert ingredient["validation_results"]["activeManifest"] == kept.validation_results["activeManifest"]
        assert read_manifest(out).parent is not None and read_manifest(out).manifest_count == 2


# -- hostile input -------------------------------------------------------------------------------------


def _box(kind: bytes, payload: bytes) -> bytes:
    return (8 + len(payload)).to_bytes(4, "big") + kind + payload


def _c2pa_box(store: bytes, purpose: bytes = b"manifest") -> bytes:
    return _box(b"uuid", C2PA_UUID + bytes(4) + purpose + b"\x00" + bytes(8) + store)


def _insert_after_ftyp(data: bytes, box: bytes) -> bytes:
    ftyp = _boxes(data)[0]
    return data[: ftyp.end] + box + data[ftyp.end :]


def _patched(data: bytes, needle: bytes, offset: int, value: bytes) -> bytes:
    at = data.index(needle) + offset
    return data[:at] + value + data[at + len(value) :]


def _hostile_files() -> dict[str, bytes]:
    out = _embedded("mp4")
    uuid = _boxes(out)[1]
    moov, = [box for box in _boxes(out) if box.type == b"moov"]
    store = read_manifest(out) and BMFF_CARRIER.find(out).store
    files = {
        "c2pa box past the file": out[: uuid.start] + (len(out) + 1).to_bytes(4, "big") + out[uuid.start + 4 :],
        "c2pa box of size 1 and a huge largesize": out[: uuid.start] + b"\x00\x00\x00\x01uuid" + (1 << 62).to_bytes(
            8, "big") + out[uuid.start + 8 :],
        "c2pa box with a huge store": _insert_after_ftyp(_signed("mp4"), (0xFFFFFF00).to_bytes(4, "big") + b"uuid"
                                                         + C2PA_UUID + bytes(4) + b"manifest\x00" + bytes(8)),
        "c2pa box of size 0 not last": out[: uuid.start] + bytes(4) + out[uuid.start + 4 :],
        "two stores": _insert_after_ftyp(out, _c2pa_box(store)),
        "a truncated store": _insert_after_ftyp(_signed("mp4"), _c2pa_box(store[: len(store) // 2])),
        "no purpose terminator": _insert_after_ftyp(_signed("mp4"), _box(b"uuid", C2PA_UUID + bytes(4) + b"manif")),
        "an unknown purpose": _insert_after_ftyp(_signed("mp4"), _c2pa_box(store, b"other")),
        "an update manifest": _insert_after_ftyp(_signed("mp4"), _c2pa_box(store, b"update")),
        "a merkle box": _insert_after_ftyp(_signed("mp4"), _c2pa_box(store, b"merkle")),
        "truncated moov": out[: moov.start + (moov.end - moov.start) // 2],
        "stco offsets past the file": _patched(out, b"stco", 12, (len(out) + 10).to_bytes(4, "big")),
        "stco offset into the c2pa box": _patched(out, b"stco", 12, (uuid.start + 100).to_bytes(4, "big")),
        "stco count past its box": _patched(out, b"stco", 8, (1 << 30).to_bytes(4, "big")),
        "too many top-level boxes": _insert_after_ftyp(out, _box(b"skip", b"") * (bmff.MAX_TOP_LEVEL_BOXES + 1)),
        "nested size 0": _patched(out, b"trak", -4, bytes(4)),
        "a second moov, nested 64 deep": _insert_after_ftyp(out, functools.reduce(
            lambda inner, _: _box(b"moov", inner), range(64), b"")),
        "a JUMBF store nested 2,000 deep": _insert_after_ftyp(_signed("mp4"), _c2pa_box(functools.reduce(
            lambda inner, _: _box(b"jumb", inner), range(2000), b""))),
        "a JUMBF store of 100,000 boxes": _insert_after_ftyp(_signed("mp4"), _c2pa_box(_box(b"jumb", _box(
            b"free", b"") * 100_000))),
        "fragmented": _insert_after_ftyp(out, _box(b"moof", _box(b"mfhd", bytes(8)))),
        "not ftyp first": out[4:8] + out[:4] + out[8:],
    }
    files.update({f"hostile store {n}": _insert_after_ftyp(_signed("mp4"), _c2pa_box(bad))
                  for n, bad in enumerate(hostile_stores(store, seed=7, mutations=12))})
    return files





@functools.cache
def _hostile() -> dict[str, bytes]:
    return _hostile_files()


def test_hostile_files_raise_codec_errors_only() -> None:
    for name, data in _hostile().items():
        for call in (BMFF_CARRIER.find, BMFF_CARRIER.strip, read_manifest, strip_manifest,
                     lambda d: verify_manifest(d, _verify_ml_dsa), lambda d: BMFF_CARRIER.layout(d, 1000),
                     lambda d: embed(d, _facts(), ml_dsa_signer()), lambda d: get_codec("mp4").hashed_parts(d)):
            try:
                call(data)
            except CodecError:
                pass
            except Exception as error:  # pragma: no cover - the failure message names the case
                raise AssertionError(f"{name}: {type(error).__name__}: {error}") from error


@pytest.mark.parametrize(("name", "error"), [
    ("c2pa box past the file", CorruptMedia), ("c2pa box with a huge store", CorruptMedia),
    ("two stores", CorruptMedia), ("no purpose terminator", CorruptMedia), ("an unknown purpose", CorruptMedia),
    ("an update manifest", UnsupportedFormat), ("a merkle box", UnsupportedFormat), ("truncated moov", CorruptMedia),
    ("too many top-level boxes", MediaTooLarge), ("not ftyp first", UnsupportedFormat),
])
def test_each_hostile_file_is_refused_when_read(name: str, error: type[CodecError]) -> None:
    with pytest.raises(error):
        BMFF_CARRIER.find(_hostile()[name])


@pytest.mark.parametrize(("name", "error"), [
    ("stco offsets past the file", CorruptMedia), ("stco count past its box", CorruptMedia),
    ("fragmented", UnsupportedFormat), ("nested size 0", CorruptMedia),
    ("a second moov, nested 64 deep", CorruptMedia),
])
def test_each_hostile_file_is_refused_when_its_offsets_move(name: str, error: type[CodecError]) -> None:
    with pytest.raises(error):
        BMFF_CARRIER.strip(_hostile()[name])
    with pytest.raises(error):
        BMFF_CARRIER.layout(_hostile()[name], 1000)


def test_a_file_without_a_store_is_read_at_its_top_level_only() -> None:
    """Finding no store asks nothing of the tables: an upload with odd chunk offsets is still signable."""
    odd = _patched(_signed("mp4"), b"stco", 12, (len(_signed("mp4")) + 10).to_bytes(4, "big"))
    assert BMFF_CARRIER.find(odd) is None and BMFF_CARRIER.strip(odd) is odd
    assert get_codec("mp4").strip_token(odd) == odd[: _boxes(odd)[-1].start]


@pytest.mark.parametrize("name", ["a JUMBF store nested 2,000 deep", "a JUMBF store of 100,000 boxes"])
def test_jumbf_bombs_are_refused_by_the_reader(name: str) -> None:
    with pytest.raises((CorruptMedia, MediaTooLarge)):
        read_manifest(_hostile()[name])


def test_a_chunk_offset_into_the_store_is_refused_when_stripped() -> None:
    with pytest.raises(CorruptMedia):
        BMFF_CARRIER.strip(_hostile()["stco offset into the c2pa box"])


def test_a_store_over_the_limit_is_too_large() -> None:
    big = _insert_after_ftyp(_signed("mp4"), _c2pa_box(bytes(carriers.MAX_STORE_BYTES + 1)))
    with pytest.raises(MediaTooLarge):
        BMFF_CARRIER.find(big)
    with pytest.raises(MediaTooLarge):
        BMFF_CARRIER.wrapped(bytes(carriers.MAX_STORE_BYTES + 1))


@pytest.mark.parametrize("exclusions", [
    None, "x", [1], [{"xpath": 3}], [{"xpath": "/uuid", "data": [{"offset": -1, "value": b"x"}]}],
    [{"xpath": "/uuid", "data": [{"offset": 1 << 70, "value": b"x"}]}],
    [{"xpath": "/moov", "subset": [{"offset": 0, "length": -4}]}], [{"xpath": "/ftyp"}] * 65,
    [{"xpath": "/" + "moov/" * 40 + "trak"}], [{"xpath": "/moov/trak/mdia", "length": "many"}],
    [{"xpath": "/\udcff"}], [{"xpath": "/uuid", "flags": b"\x01"}],
])
def test_hostile_exclusion_maps_do_not_match(exclusions: object) -> None:
    out = _embedded("mp4")
    manifest = read_manifest(out)
    content = {**manifest.assertions[BINDING_LABEL], "exclusions": exclusions}
    found = carriers.Found(b"", manifest.store_start, manifest.store_length)
    assert BMFF_CARRIER.binding_matches(out, found, content, "sha256") is False
