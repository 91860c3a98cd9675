"""media_codecs is pure: importing every module of it must not load Django."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import media_codecs

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _all_modules() -> list[str]:
    walked = pkgutil.walk_packages(media_codecs.__path__, prefix="media_codecs.")
    return ["media_codecs", *sorted(module.name for module in walked)]


def test_every_media_codecs_module_imports_without_django() -> None:
    modules = _all_modules()
    assert {"media_codecs.image.jpeg", "media_codecs.image.png", "media_codecs.image.webp",
            "media_codecs.audio.wav", "media_codecs.audio.flac", "media_codecs.audio.mp3"} <= set(modules)
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    script = (
        "import importlib, sys\n"
        "import media_codecs\n"
        "media_codecs.registered_codecs()\n"
        "heavy = {'imagehash', 'scipy', 'av', 'soundfile', 'pypdf', 'numpy', 'PIL', 'cv2', 'lxml'} & set(sys.modules)\n"
        "# each loads on first use: a worker's baseline memory stays small, and detecting a format (which\n"
        "# imports every codec module) costs the client's `svc verify --offline` no third-party import\n"
        "assert not heavy, heavy\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
