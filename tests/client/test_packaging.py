"""The client package: no Django, and a wheel that carries the service's own hashing packages."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


def test_the_client_hashes_every_format_without_loading_django_or_the_service():
    script = ("import sys, media_codecs, svc_client, svc_client.cli, svc_client.client\n"
              "media_codecs.registered_codecs()\n"
              "print(svc_client.content_hash(b'plain words'))\n"
              "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework', 'provenance',"
              " 'config', 'generators', 'verification'})\n"
              "assert not loaded, loaded\n")
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = f"{PROJECT}{os.pathsep}{PROJECT / 'client'}"
    result = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("sha3-256:")


def test_the_wheel_carries_the_client_media_codecs_record_format_and_the_svc_command(tmp_path):
    pytest.importorskip("hatchling", reason="the client's build backend (dev extra) is not installed")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(PROJECT / "client")], check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("svc_client-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for module in ("svc_client/cli.py", "media_codecs/registry.py", "media_codecs/image/jpeg.py",
                   "record_format/hashing.py", "record_format/payload.py"):
        assert module in names
    assert not any(name.startswith(("provenance/", "config/", "tests/")) for name in names)
    entry_points = next(name for name in names if name.endswith("entry_points.txt"))
    assert "svc = svc_client.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


OFFLINE_SCRIPT = """
import base64, sys, uuid
from pathlib import Path
import svc_client.cli
from svc_client import PinnedKeys, SigningKey, content_hash, record_sign, verify_offline

HEAVY = {"numpy", "PIL", "cv2", "lxml", "av", "soundfile", "scipy", "pypdf", "requests", "urllib3", "http"}

def loaded(names):
    return sorted(names & {module.split(".")[0] for module in sys.modules})

plain, with_token = (Path(name).read_bytes() for name in sys.argv[1:3])
key, generator_id = SigningKey.generate(), str(uuid.uuid4())
draft = record_sign(key=key, generator_id=generator_id, model="m", data=plain)
record = {"record_id": str(uuid.uuid4()), **draft.signed_payload, "signed_payload": draft.signed_payload,
          "signature": base64.b64encode(draft.signature).decode(), "kid": key.kid}
result = verify_offline(plain, record, PinnedKeys(generator_id=generator_id, keys={key.kid: key.public_key}))
assert result.authentic, result.reason
assert not loaded(HEAVY), loaded(HEAVY)
codecs = sorted(name for name, module in sys.modules.items()
                if name.startswith("media_codecs.") and hasattr(module, "CODEC"))
assert codecs == ["media_codecs.image.jpeg"], codecs  # detection stopped at the JPEG signature
print(draft.content_hash)
# A server-signed JPEG carries its token in XMP: reading that packet takes lxml, and nothing else heavy.
print(content_hash(with_token))
assert loaded(HEAVY) == ["lxml"], loaded(HEAVY)
"""


def test_offline_verification_of_a_jpeg_loads_only_what_the_jpeg_needs(tmp_path):
    """`svc verify --offline` stays well under its 300 ms because detection and hashing import what the
    detected format needs: the JPEG codec alone, no numpy, Pillow or OpenCV, no HTTP stack, lxml only for
    an XMP packet (bench/client_offline.py; docs/performance.md)."""
    from media_codecs import get_codec
    from record_format.hashing import content_hash_of_file
    from tests.media import photo_bytes

    plain = photo_bytes(fmt="jpeg")
    with_token = get_codec("jpeg").embed_token(plain, "svc_token-in-xmp")
    (tmp_path / "plain.jpg").write_bytes(plain)
    (tmp_path / "token.jpg").write_bytes(with_token)
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = f"{PROJECT}{os.pathsep}{PROJECT / 'client'}"
    result = subprocess.run([sys.executable, "-c", OFFLINE_SCRIPT, str(tmp_path / "plain.jpg"),
                             str(tmp_path / "token.jpg")], cwd=PROJECT, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    hashes = result.stdout.split()
    assert hashes == [content_hash_of_file(plain), content_hash_of_file(with_token)]
    assert hashes[0] == hashes[1]  # the token's XMP segment is outside the content hash
