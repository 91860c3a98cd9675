"""The image watermark writes the same pixels it always wrote (pure module: run with ``-p no:django``).

Marks already in signed files are read with today's reader, and the package's modules (layout, embedding,
second layer, reading, lattice search) were split out of one module without changing a number: a rounded
marked photo is pinned by its digest, one below and one above the size whose canonical copy is summed
band by band.
"""

import hashlib

import numpy as np
import pytest
import skimage.data
from PIL import Image

from media_codecs.image.watermark import embed_luma

MARK_ID = 0xC0FFEE_1234_5678_9A


@pytest.mark.parametrize(("height", "width", "digest"), [
    (300, 400, "10b7b0ca2ce31c46da8c93eadbb2c3ba78681a062ad51061ac58f8ede71f93f4"),
    (2003, 2101, "0f7f2d94d4e23dec890f6628c813a9fed84b61f0428d67577274aa976b701de5"),
])
def test_the_marked_pixels_are_the_ones_signed_files_carry(height, width, digest):
    photo = Image.fromarray(skimage.data.astronaut()).resize((width, height)).convert("L")
    marked = np.clip(np.rint(embed_luma(np.asarray(photo, dtype=np.float32), MARK_ID)), 0, 255).astype(np.uint8)
    assert hashlib.sha256(marked.tobytes()).hexdigest() == digest
