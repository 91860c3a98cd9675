"""The image watermark writes the same pixels it always wrote (pure module: run with ``-p no:django``).

Marks already in signed files are read with today's reader, and the package's modules (layout, embedding,
second layer, reading, lattice search) were split out of one module without changing a number: a rounded
marked photo is pinned, one below and one above the size whose canonical copy is summed band by band.
The small one by its digest; the large one by the mark's change summed over 64 x 64 blocks, within a few
pixels' worth: OpenCV's float resizing of the bands differs in the last bit between CPUs (AVX-512 or not),
which moves about 10 of its 4.2 million rounded pixels by one, while any change to the mark moves the
blocks by hundreds.
"""

import base64
import hashlib
import zlib
from pathlib import Path

import numpy as np
import skimage.data
from PIL import Image

from media_codecs.image.watermark import embed_luma

MARK_ID = 0xC0FFEE_1234_5678_9A


BLOCKS = Path(__file__).with_name("watermark_2003x2101_blocks.b64")
BLOCK = 64


def _marked(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    photo = np.asarray(Image.fromarray(skimage.data.astronaut()).resize((width, height)).convert("L"))
    marked = np.clip(np.rint(embed_luma(photo.astype(np.float32), MARK_ID)), 0, 255).astype(np.uint8)
    return photo, marked


def test_the_marked_pixels_of_a_small_photo_are_the_ones_signed_files_carry():
    _, marked = _marked(300, 400)
    assert hashlib.sha256(marked.tobytes()).hexdigest() == (
        "10b7b0ca2ce31c46da8c93eadbb2c3ba78681a062ad51061ac58f8ede71f93f4")


def test_the_mark_of_a_large_photo_is_the_one_signed_files_carry():
    photo, marked = _marked(2003, 2101)
    change = marked.astype(np.int32) - photo.astype(np.int32)
    blocks = np.add.reduceat(np.add.reduceat(change, np.arange(0, 2003, BLOCK), axis=0), np.arange(0, 2101, BLOCK),
                             axis=1)
    pinned = np.frombuffer(zlib.decompress(base64.b64decode(BLOCKS.read_text())), dtype="<i4").reshape(blocks.shape)
    assert np.abs(pinned).mean() > 300  # the pin holds a mark, not nothing
    assert np.abs(blocks - pinned).max() <= 16 and np.abs(blocks - pinned).sum() <= 64
