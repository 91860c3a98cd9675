"""`svc sign --key` (client-managed) writes the file with its token embedded, as the service's signing does:
the content hash unchanged, the token where the service puts it, verified by the live service with and
without it; existing files kept unless --force; the service's own pHash of images and video by default."""

import io
import json
import shutil
import subprocess
import sys

import pytest
from PIL import Image

from media_codecs import get_codec, open_media
from provenance.models import Record
from svc_client import content_hash
from svc_client.signing import content_phash
from svc_client.summary import verdict_text
from tests.factories import make_api_key, make_org, make_user
from tests.media import photo_bytes
from tests.video import remux

pytestmark = pytest.mark.django_db(transaction=True)

XMP_FORMATS = ("jpeg", "png", "webp", "pdf")  # exiftool reads our XMP-svc:Token in these
EXTENSIONS = {"jpeg": "jpg"}


@pytest.fixture
def signer(svc, client_generator, tmp_path, monkeypatch):
    """`sign(*files, *options)` with the client-managed generator's key file, in a temporary folder;
    returns (exit code, the JSON results or None, stderr)."""
    monkeypatch.chdir(tmp_path)
    generator_id, key = client_generator
    key.save("key.json")

    def sign(*argv: str):
        code, out, err = svc("--json", "sign", *argv, "--generator", generator_id, "--model", "m-1",
                             "--key", "key.json")
        return code, json.loads(out).get("results"), err
    return sign


def exiftool_token(path) -> str:
    result = subprocess.run(["exiftool", "-XMP-svc:Token", "-b", str(path)], capture_output=True, check=True,
                            timeout=600)
    return result.stdout.decode()


def test_a_client_signed_file_of_every_format_carries_its_token_and_hashes_as_signed(svc, signer, samples,
                                                                                     tmp_path):
    names = []
    for fmt, data in samples.items():
        if fmt == "txt":
            continue
        names.append(f"sample.{EXTENSIONS.get(fmt, fmt)}")
        (tmp_path / names[-1]).write_bytes(data)
    code, results, err = signer(*names)
    assert code == 0, err

    for name, result in zip(names, results, strict=True):
        fmt = name.rsplit(".", 1)[1]
        signed_path = tmp_path / name.replace(".", ".signed.", 1)
        assert result["signed_file"] == signed_path.name
        signed = signed_path.read_bytes()
        original = (tmp_path / name).read_bytes()
        assert signed != original
        media = open_media(signed)
        assert media.codec.extract_token(media) == result["token"], name
        # The hash the record signed is the hash of the input and of the output: the token is outside it.
        assert content_hash(signed) == content_hash(original) == result["content_hash"], name
        if media.codec.format in XMP_FORMATS and shutil.which("exiftool"):
            assert exiftool_token(signed_path) == result["token"], name

        code, out, _ = svc("--json", "verify", signed_path.name, key=False)
        verdict = json.loads(out)
        assert code == 0, (name, verdict)
        assert (verdict["record_id"], verdict["token_source"]) == (result["record_id"], media.codec.token_source)
    assert sorted({name.rsplit(".", 1)[1] for name in names}) == sorted(  # every format but plain text
        EXTENSIONS.get(fmt, fmt) for fmt in samples if fmt != "txt")


def test_an_unchanged_client_signed_file_is_found_without_its_token(svc, signer, samples, tmp_path):
    (tmp_path / "photo.png").write_bytes(samples["png"])
    (tmp_path / "song.wav").write_bytes(samples["wav"])
    code, results, err = signer("photo.png", "song.wav")
    assert code == 0, err
    for result in results:
        signed = (tmp_path / result["signed_file"]).read_bytes()
        codec = open_media(signed).codec
        bare = codec.strip_token(signed)
        assert codec.extract_token(bare) is None
        (tmp_path / f"bare.{codec.format}").write_bytes(bare)

        code, out, _ = svc("--json", "verify", f"bare.{codec.format}", key=False)
        verdict = json.loads(out)
        assert code == 0, verdict
        assert (verdict["record_id"], verdict["token_source"]) == (result["record_id"], "content_hash"), verdict


def test_a_plain_text_is_signed_without_a_copy_and_its_token_is_printed(svc, signer, client_generator, samples,
                                                                       tmp_path):
    (tmp_path / "notes.txt").write_bytes(samples["txt"])
    code, results, _ = signer("notes.txt")
    assert code == 0
    assert results[0]["signed_file"] is None
    assert sorted(path.name for path in tmp_path.iterdir()) == ["key.json", "notes.txt"]
    code, out, _ = svc("--json", "verify", "notes.txt", "--token", results[0]["token"], key=False)
    assert code == 0 and json.loads(out)["record_id"] == results[0]["record_id"]

    code, out, _ = svc("sign", "notes.txt", "--generator", client_generator[0], "--model", "m", "--key", "key.json")
    assert code == 0
    assert "this format has no place for a token: keep the token with the file" in out


def test_an_existing_signed_file_is_kept_and_nothing_is_signed_unless_force(svc, signer, samples, tmp_path):
    (tmp_path / "photo.jpg").write_bytes(samples["jpeg"])
    (tmp_path / "photo.signed.jpg").write_bytes(b"mine")
    records = Record.objects.count()

    code, results, err = signer("photo.jpg")
    assert (code, results) == (2, None)
    assert err == "svc: photo.signed.jpg exists; nothing was signed (--force overwrites it)\n"
    assert (tmp_path / "photo.signed.jpg").read_bytes() == b"mine"
    assert Record.objects.count() == records
    # The check comes before any call: with the service unreachable it is still a usage error.
    code, _, err = svc("--url", "http://127.0.0.1:9", "sign", "photo.jpg", "--generator", "g", "--model", "m")
    assert code == 2 and "photo.signed.jpg exists" in err

    code, results, _ = signer("photo.jpg", "--force")
    assert code == 0
    assert open_media((tmp_path / "photo.signed.jpg").read_bytes()).codec.extract_token(
        (tmp_path / "photo.signed.jpg").read_bytes()) == results[0]["token"]
    assert Record.objects.count() == records + 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["key.json", "photo.jpg", "photo.signed.jpg"]


def test_output_and_out_dir_name_where_client_signed_files_go(signer, samples, tmp_path):
    (tmp_path / "a.png").write_bytes(samples["png"])
    (tmp_path / "b.flac").write_bytes(samples["flac"])
    (tmp_path / "out").mkdir()
    code, results, _ = signer("a.png", "-o", "chosen.png")
    assert code == 0 and results[0]["signed_file"] == "chosen.png" and (tmp_path / "chosen.png").is_file()
    code, results, _ = signer("a.png", "b.flac", "--out-dir", "out")
    assert code == 0
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["a.signed.png", "b.signed.flac"]
    code, _, err = signer("a.png", "b.flac", "-o", "one.png")
    assert code == 2 and "--output names one file" in err
    code, _, err = signer("a.png", "--out-dir", "missing")
    assert (code, err) == (2, "svc: missing is not a folder; nothing was signed\n")
    code, _, err = signer("a.png", "a.png", "--force")
    assert code == 2 and "two files would be written to a.signed.png" in err


def test_server_managed_signing_keeps_an_existing_file_too(svc, samples, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    generator_id = json.loads(svc("--json", "register", "hosted", "--server-managed")[1])["generator_id"]
    (tmp_path / "song.wav").write_bytes(samples["wav"])
    (tmp_path / "song.signed.wav").write_bytes(b"mine")
    records = Record.objects.count()
    code, _, err = svc("sign", "song.wav", "--generator", generator_id, "--model", "m")
    assert code == 2 and err == "svc: song.signed.wav exists; nothing was signed (--force overwrites it)\n"
    assert Record.objects.count() == records
    assert svc("sign", "song.wav", "--generator", generator_id, "--model", "m", "--force")[0] == 0
    assert (tmp_path / "song.signed.wav").read_bytes() != b"mine"


def test_the_phash_is_on_by_default_for_images_and_video_and_is_the_services_own(service, signer, samples,
                                                                                tmp_path):
    (tmp_path / "photo.webp").write_bytes(samples["webp"])
    (tmp_path / "clip.mp4").write_bytes(samples["mp4"])
    (tmp_path / "song.flac").write_bytes(samples["flac"])
    code, results, _ = signer("photo.webp", "clip.mp4", "song.flac")
    assert code == 0
    expected = [get_codec("webp").fingerprint(samples["webp"]), get_codec("mp4").fingerprint(samples["mp4"]), None]
    assert expected[0] and expected[1]
    assert [service.record_get(r["record_id"])["phash"] for r in results] == expected
    assert [r["phash"] for r in results] == expected == [content_phash(samples[f]) for f in ("webp", "mp4", "flac")]

    code, results, _ = signer("photo.webp", "clip.mp4", "--no-phash", "--force")
    assert code == 0
    assert [service.record_get(r["record_id"])["phash"] for r in results] == [None, None]


def test_a_client_signed_video_remuxed_to_another_container_is_found_by_its_phash(svc, signer, samples,
                                                                                  service, tmp_path):
    (tmp_path / "clip.mp4").write_bytes(samples["mp4"])
    code, results, _ = signer("clip.mp4")
    assert code == 0
    assert service.record_get(results[0]["record_id"])["format"] == "video"
    (tmp_path / "copy.mkv").write_bytes(remux(samples["mp4"], "mp4", "mkv"))  # other bytes, no token

    code, out, _ = svc("--json", "verify", "copy.mkv", key=False)
    verdict = json.loads(out)
    assert (verdict["record_id"], verdict["token_source"], verdict["reason"]) == (
        results[0]["record_id"], "phash", "content_tampered")
    assert code == 1


def test_a_changed_copy_of_a_client_signed_image_is_found_by_its_phash(svc, signer, tmp_path):
    picture = photo_bytes("coffee", fmt="png")
    (tmp_path / "photo.png").write_bytes(picture)
    code, results, _ = signer("photo.png")
    assert code == 0
    image = Image.open(io.BytesIO(picture)).convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=80)  # converted: another format, other bytes, no token
    (tmp_path / "copy.jpg").write_bytes(buffer.getvalue())

    code, out, _ = svc("--json", "verify", "copy.jpg", key=False)
    verdict = json.loads(out)
    assert code == 1
    assert (verdict["record_id"], verdict["token_source"], verdict["reason"]) == (
        results[0]["record_id"], "phash", "content_tampered")


def test_two_organizations_each_verification_names_the_signer_of_the_file(svc, signer, tmp_path, live_server):
    """A signs a picture server-managed (watermarked). B re-saves it (A's watermark still readable) and signs
    it client-managed through `svc sign`. B's file without its token is B's: found by its exact hash."""
    org_a = make_org(name="Alpha Studio")
    make_user(org=org_a)
    key_a = make_api_key(org=org_a)
    code, out, _ = svc("--api-key", key_a, "--json", "register", "alpha", "--server-managed", key=False)
    generator_a = json.loads(out)["generator_id"]
    (tmp_path / "picture.png").write_bytes(photo_bytes("astronaut", fmt="png"))
    code, out, _ = svc("--api-key", key_a, "--json", "sign", "picture.png", "--generator", generator_a, "--model",
                       "a-model", key=False)
    assert code == 0
    signed_a = (tmp_path / "picture.signed.png").read_bytes()
    record_a = Record.objects.get(pk=json.loads(out)["results"][0]["record_id"])
    mark_a = int(record_a.watermark_id, 16)

    # B's file: A's picture re-saved (other bytes, A's token gone, A's watermark intact).
    buffer = io.BytesIO()
    Image.open(io.BytesIO(signed_a)).save(buffer, "PNG", compress_level=9)
    (tmp_path / "b.png").write_bytes(buffer.getvalue())
    assert get_codec("png").extract_watermark(buffer.getvalue()) == mark_a
    code, results, err = signer("b.png")
    assert code == 0, err
    record_b = results[0]["record_id"]
    signed_b = (tmp_path / "b.signed.png").read_bytes()
    assert get_codec("png").extract_watermark(signed_b) == mark_a  # A's watermark is readable in B's file
    (tmp_path / "b.bare.png").write_bytes(get_codec("png").strip_token(signed_b))

    for name in ("b.signed.png", "b.bare.png"):
        code, out, _ = svc("--json", "verify", name, key=False)
        verdict = json.loads(out)
        assert code == 0, verdict
        assert verdict["record_id"] == record_b, verdict
        assert verdict["provenance"]["org"] == Record.objects.get(pk=record_b).org.name
        code, out, _ = svc("verify", name, key=False)
        assert code == 0 and out == verdict_text(verdict) + "\n"
        assert verdict["provenance"]["org"] in out  # B is named (A may be too, as the watermark's signer)
    assert json.loads(svc("--json", "verify", "b.bare.png", key=False)[1])["token_source"] == "content_hash"
    # A's own file still answers A.
    code, out, _ = svc("--json", "verify", "picture.signed.png", key=False)
    assert code == 0 and json.loads(out)["record_id"] == str(record_a.pk)


def test_a_file_changed_while_it_was_signed_gets_no_signed_copy_and_its_record_is_reported(
        signer, samples, tmp_path, monkeypatch):
    from svc_client.client import Client

    (tmp_path / "photo.png").write_bytes(samples["png"])
    real_submit = Client.record_submit

    def submit_then_change_the_file(self, draft):
        created = real_submit(self, draft)
        (tmp_path / "photo.png").write_bytes(photo_bytes("coffee", fmt="png"))  # edited meanwhile
        return created

    monkeypatch.setattr(Client, "record_submit", submit_then_change_the_file)
    code, results, err = signer("photo.png")
    assert code == 2
    (result,) = results
    assert result["signed_file"] is None and "the record signed" in result["error"]
    assert err.startswith(f"svc: photo.png: record {result['record_id']} is stored, but its signed copy was not "
                          "written: the signed file hashes to ")
    assert err.rstrip().endswith(f"its token is {result['token']}") and len(err.splitlines()) == 1
    assert not (tmp_path / "photo.signed.png").exists()
    assert Record.objects.filter(pk=result["record_id"]).exists()


def test_a_video_is_signed_without_a_phash_and_a_warning_when_pyav_is_not_installed(monkeypatch, capsys, samples):
    import media_codecs.video
    from svc_client.cli import _phash

    monkeypatch.delitem(sys.modules, "media_codecs.video.frames", raising=False)
    monkeypatch.delattr(media_codecs.video, "frames", raising=False)  # as if it had never been imported
    monkeypatch.setitem(sys.modules, "av", None)  # what `import av` meets where PyAV is not installed
    assert _phash("clip.mp4", samples["mp4"]) is None
    assert capsys.readouterr().err == ("svc: clip.mp4 is signed without a pHash: decoding it needs av "
                                       "(pip install 'svc-client[phash]')\n")
