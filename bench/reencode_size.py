"""How much signing grows a file: watermark plus token, per format, on scikit-image's photographs.

    .venv/bin/python bench/reencode_size.py

Each input is saved as a camera or generator would save it; the signed file is what POST /v1/sign
returns (watermarked, re-encoded like the input, token embedded). Prints the size change per case
and the median per format.
"""

import io
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PIL import Image
from skimage import data as samples

from media_codecs import get_codec

PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "camera")
CASES = {  # name -> (codec format, Pillow format, save options, image mode)
    "JPEG q90 colour": ("jpeg", "JPEG", {"quality": 90}, "RGB"),
    "JPEG q75 colour": ("jpeg", "JPEG", {"quality": 75}, "RGB"),
    "JPEG q90 grey": ("jpeg", "JPEG", {"quality": 90}, "L"),
    "PNG colour": ("png", "PNG", {}, "RGB"),
    "WebP q85 lossy": ("webp", "WEBP", {"quality": 85}, "RGB"),
    "WebP q75 lossy": ("webp", "WEBP", {"quality": 75}, "RGB"),
    "WebP lossless": ("webp", "WEBP", {"lossless": True}, "RGB"),
}
TOKEN = "svc_" + "A" * 44


def encoded(name: str, pillow_format: str, options: dict, mode: str) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(getattr(samples, name)()).convert(mode).save(buffer, pillow_format, **options)
    return buffer.getvalue()


def main() -> None:
    print(f"{'case':18} " + " ".join(f"{photo:>10}" for photo in PHOTOS) + f" {'median':>8}")
    for case, (codec_format, pillow_format, options, mode) in CASES.items():
        codec = get_codec(codec_format)
        changes = []
        for photo in PHOTOS:
            original = encoded(photo, pillow_format, options, mode)
            signed = codec.embed_token(codec.embed_watermark(original, 0x0123456789ABCDEF), TOKEN)
            changes.append(100.0 * (len(signed) - len(original)) / len(original))
        cells = " ".join(f"{change:>+9.1f}%" for change in changes)
        print(f"{case:18} {cells} {statistics.median(changes):>+7.1f}%")


if __name__ == "__main__":
    main()
