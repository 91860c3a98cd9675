"""What the machine-readable disclosure costs a signing: time and bytes the token's container gains, format
by format (docs/performance.md, "Disclosure").

Each sample file is given its token with and without a Disclosure (media_codecs/disclosure.py: the source type
URI, a provider, a system and version, a time and a record id of typical length), `--runs` times each way,
alternating; printed: the median time of `embed_token` and the file's size each way, and the difference.
No Django, no database: the disclosure is all in `embed_token` (the signing's other steps do not change).

Then the visible label (`disclosure=visible`, media_codecs/label.py): drawn in the same pass as the mark, on
the decoded picture, so what it adds is `draw_label` on a 12-megapixel photograph (4000 x 3000, each corner and
two sizes), median of `--runs`.

    .venv/bin/python bench/disclosure.py [--runs 200]
"""

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TOKEN = "svc_" + "A" * 60


def samples() -> dict[str, bytes]:
    from tests import audio
    from tests.media import photo_bytes
    from tests.pdf_samples import text_pdf
    from tests.text_samples import HTML_PAGE

    tone = audio.tone(10.0)
    return {"jpeg": photo_bytes("coffee", "jpeg"), "png": photo_bytes("rocket", "png"),
            "webp": photo_bytes("astronaut", "webp"), "pdf": text_pdf(), "html": HTML_PAGE.encode(),
            "wav": audio.wav_bytes(tone), "flac": audio.flac_bytes(tone), "mp3": audio.ffmpeg_mp3(tone)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    from media_codecs import get_codec
    from media_codecs.disclosure import Disclosure, source_type_uri

    disclosure = Disclosure(source_type_uri("compositeWithTrainedAlgorithmicMedia"), "Acme Generative AI Inc.",
                            "Acme Diffusion XL", "3.1.4", "2026-11-28T02:30:00.123456Z",
                            "01234567-89ab-4def-8123-456789abcdef")
    print("| format | file | embed_token without / with the disclosure (median) | added time | added bytes |")
    print("|---|---|---|---|---|")
    for fmt, data in samples().items():
        codec = get_codec(fmt)
        timings: dict[bool, list[float]] = {False: [], True: []}
        sizes = {}
        for _ in range(args.runs):
            for disclosed in (False, True):
                media = codec.open(data)  # parsed outside the timing, as signing has it open already
                started = time.perf_counter()
                out = codec.embed_token(media, TOKEN, disclosure if disclosed else None)
                timings[disclosed].append(time.perf_counter() - started)
                sizes[disclosed] = len(out)
        plain, disclosed = (statistics.median(timings[key]) * 1e3 for key in (False, True))
        print(f"| {fmt} | {len(data) / 1024:,.0f} KB | {plain:.3f} / {disclosed:.3f} ms | {disclosed - plain:+.3f} ms "
              f"| {sizes[True] - sizes[False]:+,} |")

    label_table(args.runs)


def label_table(runs: int) -> None:
    from PIL import Image

    from media_codecs.image.label import draw_label
    from media_codecs.label import POSITIONS, Label
    from tests.media import photo_bytes

    picture = Image.open(io.BytesIO(photo_bytes("coffee", "png"))).convert("RGB").resize((4000, 3000))
    print("\n| label on a 4000 x 3000 picture | draw_label (median) |\n|---|---|")
    for label in [Label(position=position) for position in POSITIONS] + [Label("Made with Acme Diffusion XL", size=8)]:
        timings = []
        for _ in range(runs):
            copy = picture.copy()
            started = time.perf_counter()
            draw_label(copy, label)
            timings.append(time.perf_counter() - started)
        print(f"| {label.text!r}, {label.position}, {label.size:g}% | {statistics.median(timings) * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
