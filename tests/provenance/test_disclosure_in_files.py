"""What a signed file discloses in its metadata (EU AI Act Article 50(2), SB 942's latent disclosure), read
back by independent tools: exiftool for every XMP format, pypdf for PDF."""

import io
import json
import shutil
import subprocess

import mutagen.flac
import mutagen.mp3
import pytest
from lxml import html as lxml_html
from pypdf import PdfReader

from generators.models import Generator
from media_codecs import get_codec, xmp
from media_codecs.disclosure import Disclosure, source_type_uri
from provenance.models import Record
from tests import audio, factories, video
from tests.media import photo_bytes
from tests.pdf_samples import text_pdf
from tests.text_samples import HTML_PAGE
from tests.verification import uploads

pytestmark = pytest.mark.django_db
TYPE_URI = "http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia"
SAMPLES = {"jpeg": lambda: photo_bytes("coffee", "jpeg"), "png": lambda: photo_bytes("rocket", "png"),
           "webp": lambda: photo_bytes("astronaut", "webp"), "pdf": text_pdf,
           "mp4": lambda: video.sample("mp4", seconds=1.0), "mov": lambda: video.sample("mov", seconds=1.0)}


@pytest.fixture
def declared(org):
    generator = factories.make_generator(org=org, formats=["image", "text", "audio", "video"])
    Generator.objects.filter(pk=generator.pk).update(
        provider_name="Acme AI & Co", system_name="Acme Diffusion", system_version="3.1 <beta>",
        digital_source_type="compositeWithTrainedAlgorithmicMedia")
    return generator


def _signed(key_client, org, generator, fmt):
    response = uploads.sign(key_client(org), generator, SAMPLES[fmt](), model="m-1", watermark="false")
    assert response.status_code == 201, response.content[:300]
    return response.content, Record.objects.get(pk=response["X-Service-Record-Id"])


@pytest.mark.skipif(shutil.which("exiftool") is None, reason="exiftool is not installed")
@pytest.mark.parametrize("fmt", list(SAMPLES))
def test_exiftool_reads_the_disclosure_of_every_xmp_format(key_client, org, declared, fmt, tmp_path):
    content, record = _signed(key_client, org, declared, fmt)
    path = tmp_path / f"signed.{fmt}"
    path.write_bytes(content)
    found = json.loads(subprocess.run(["exiftool", "-j", "-XMP:all", str(path)], capture_output=True, check=True,
                                      timeout=600).stdout)[0]
    assert found["DigitalSourceType"] == TYPE_URI
    assert (found["AISystemUsed"], str(found["AISystemVersionUsed"])) == ("Acme Diffusion", "3.1 <beta>")
    assert (found["Provider"], found["Identifier"]) == ("Acme AI & Co", str(record.pk))
    assert found["Created"].startswith(record.signed_at.strftime("%Y:%m:%d %H:%M:%S"))  # exiftool's spelling
    assert found["Token"].startswith("svc_")


def test_pypdf_reads_the_disclosure_of_a_pdf(key_client, org, declared):
    content, record = _signed(key_client, org, declared, "pdf")
    metadata = PdfReader(io.BytesIO(content)).xmp_metadata
    packet = metadata.stream.get_data()
    assert xmp.read_disclosure(packet) == {
        "source_type": TYPE_URI, "provider_name": "Acme AI & Co", "system_name": "Acme Diffusion",
        "system_version": "3.1 <beta>", "created": uploads.iso(record.signed_at), "identifier": str(record.pk)}


def test_the_disclosure_goes_with_the_token_and_a_resigning_replaces_it():
    codec = get_codec("pdf")
    first = Disclosure(source_type_uri("trainedAlgorithmicMedia"), "A", "S", "1", "2026-11-28T00:00:00Z", "one")
    second = Disclosure(source_type_uri("algorithmicMedia"), created="2026-11-28T01:00:00Z", identifier="two")
    original = text_pdf()
    once = codec.embed_token(original, "svc_first", first)
    twice = codec.embed_token(once, "svc_second", second)
    assert codec.strip_token(once) == codec.strip_token(original) == codec.strip_token(twice)
    assert twice.startswith(original) and len(twice) - len(original) == len(once) - len(original) - len(
        xmp.build_packet("svc_first", first)) + len(xmp.build_packet("svc_second", second))  # one update, replaced
    assert codec.extract_token(twice) == "svc_second"
    packet = PdfReader(io.BytesIO(twice)).xmp_metadata.stream.get_data()
    assert xmp.read_disclosure(packet) == {"source_type": source_type_uri("algorithmicMedia"),
                                           "created": "2026-11-28T01:00:00Z", "identifier": "two"}
    image = get_codec("png")
    marked = image.embed_token(photo_bytes("rocket", "png"), "svc_first", first)
    assert image.strip_token(marked) == image.strip_token(photo_bytes("rocket", "png"))


def _expected(record) -> dict[str, str]:
    return {"source_type": TYPE_URI, "provider_name": "Acme AI & Co", "system_name": "Acme Diffusion",
            "system_version": "3.1 <beta>", "created": uploads.iso(record.signed_at), "identifier": str(record.pk)}


@pytest.mark.parametrize(("fmt", "make"), [("flac", lambda: audio.flac_bytes(audio.tone(2.0))),
                                           ("mp3", lambda: audio.ffmpeg_mp3(audio.tone(2.0)))])
def test_mutagen_reads_the_disclosure_of_flac_and_mp3(key_client, org, declared, fmt, make):
    response = uploads.sign(key_client(org), declared, make(), model="m-1")
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    names = {"source_type": "svc_digital_source_type", "provider_name": "svc_provider", "system_name": "svc_system",
             "system_version": "svc_system_version", "created": "svc_created", "identifier": "svc_identifier"}
    if fmt == "flac":
        tags = mutagen.flac.FLAC(io.BytesIO(response.content)).tags
        found = {name: tags[field][0] for name, field in names.items()}
    else:
        tags = mutagen.mp3.MP3(io.BytesIO(response.content)).tags
        found = {name: str(tags[f"TXXX:{field}"]) for name, field in names.items()}
    assert found == _expected(record)
    codec = get_codec(fmt)
    assert codec.strip_token(response.content) == codec.strip_token(make())  # the disclosure goes with the token


def test_an_html_page_discloses_in_meta_elements(key_client, org, declared):
    response = uploads.sign(key_client(org), declared, HTML_PAGE.encode(), model="m-1")
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    metas = {meta.get("name"): meta.get("content") for meta in lxml_html.fromstring(response.content).iter("meta")}
    names = {"source_type": "provenance-digital-source-type", "provider_name": "provenance-provider",
             "system_name": "provenance-system", "system_version": "provenance-system-version",
             "created": "provenance-created", "identifier": "provenance-identifier"}
    found = {name: metas[meta] for name, meta in names.items()}
    assert found == _expected(record)
    assert metas["provenance-token"] == response["X-Service-Token"]


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe is not installed")
def test_ffprobe_reads_the_riff_info_disclosure_of_a_wav_beside_the_files_own(key_client, org, declared, tmp_path):
    original = audio.tagged_wav(audio.tone(2.0))
    response = uploads.sign(key_client(org), declared, original, model="m-1")
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    path = tmp_path / "signed.wav"
    path.write_bytes(response.content)
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format_tags", "-of", "json", str(path)],
                           capture_output=True, check=True, timeout=600)
    tags = json.loads(probe.stdout)["format"]["tags"]
    assert (tags["ISRF"], tags["ISRC"], tags["encoder"]) == (TYPE_URI, "Acme AI & Co", "Acme Diffusion 3.1 <beta>")
    assert (tags["date"], tags["comment"]) == (uploads.iso(record.signed_at), f"identifier {record.pk}")
    assert (tags["title"], tags["artist"]) == ("Test tone", "Ada")  # the file's own INFO is kept
    codec = get_codec("wav")
    assert codec.strip_token(response.content) == codec.strip_token(original)
