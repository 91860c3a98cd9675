"""media_codecs is pure: importing every module of it must not load Django."""

from __future__ import annotations

import pkgutil

import media_codecs
from tests.purity import assert_imports_without_django


def _all_modules() -> list[str]:
    walked = pkgutil.walk_packages(media_codecs.__path__, prefix="media_codecs.")
    return ["media_codecs", *sorted(module.name for module in walked)]


def test_every_media_codecs_module_imports_without_django() -> None:
    modules = _all_modules()
    assert {"media_codecs.image.jpeg", "media_codecs.image.png", "media_codecs.image.webp",
            "media_codecs.audio.wav", "media_codecs.audio.flac", "media_codecs.audio.mp3"} <= set(modules)
    assert_imports_without_django(modules, first=(
        "import media_codecs\n"
        "media_codecs.registered_codecs()\n"
        "heavy = {'imagehash', 'scipy', 'av', 'soundfile', 'pypdf', 'numpy', 'PIL', 'cv2', 'lxml'} & set(sys.modules)\n"
        "# each loads on first use: a worker's baseline memory stays small, and detecting a format (which\n"
        "# imports every codec module) costs the client's `svc verify --offline` no third-party import\n"
        "assert not heavy, heavy\n"
    ))
