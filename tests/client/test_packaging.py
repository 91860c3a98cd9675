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
                            timeout=60)
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
