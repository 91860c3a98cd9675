"""Hostile input to the codecs alone (no Django): wall-clock and CPU seconds per case.

The tests bound these by the CPU of the process doing the work (tests/waiting.py, CpuSpent), which a busy
machine does not stretch; this prints both figures, so a slow machine shows as wall > CPU.

Cases: a 16 MB HTML page of tags read, searched and stripped (tests/media_codecs/text/test_html_and_plain.py);
50 MB of the smallest MP3 frames refused (tests/media_codecs/test_mp3.py); every hostile PDF structure of
tests/media_codecs/test_pdf.py (HOSTILE) refused or read.

    nice -n 10 .venv/bin/python bench/codec_cpu.py [--repeat 3]
"""

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "media_codecs")]  # test_pdf imports its folder's conftest

from media_codecs import get_codec  # noqa: E402
from tests import hostile_media as hm  # noqa: E402


def _cpu() -> float:
    user, system, children_user, children_system, _ = os.times()
    return user + system + children_user + children_system


def _html_tag_bomb() -> Callable[[], object]:
    html = get_codec("html")
    tag_bomb = b"<!DOCTYPE html><body>" + b"<b>x</b>" * 2_000_000

    def run():
        media = html.open(tag_bomb)
        html.extract_token(media), html.extract_watermark(media)
        html.strip_token(media)
    return run


def _mp3_smallest_frames() -> Callable[[], object]:
    codec = get_codec("mp3")
    data = hm.mp3_smallest_frames(50 * hm.MB)
    codec.score(data[:4096])
    return lambda: _swallow(lambda: codec.open(data))


def _pdf_case(build: Callable[[], bytes]) -> Callable[[], object]:
    codec = get_codec("pdf")
    data = build()

    def run():
        _swallow(lambda: codec.open(data))
        _swallow(lambda: codec.extract_token(data))
    return run


def _swallow(call: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):  # the codec's refusal is the expected outcome
        call()


def cases() -> dict[str, Callable[[], Callable[[], object]]]:
    import importlib

    test_pdf = importlib.import_module("test_pdf")  # tests/media_codecs/test_pdf.py, on the path above

    found = {"html-16MB-of-tags": _html_tag_bomb, "mp3-50MB-smallest-frames": _mp3_smallest_frames}
    for name, (build, _) in test_pdf.HOSTILE.items():
        found[f"pdf-{name}"] = lambda build=build: _pdf_case(build)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; the slowest of {args.repeat} runs")
    print(f"{'case':48} {'wall s':>8} {'CPU s':>8}")
    for name, prepare in cases().items():
        run = prepare()
        wall = cpu = 0.0
        for _ in range(args.repeat):
            started, started_cpu = time.perf_counter(), _cpu()
            run()
            wall, cpu = max(wall, time.perf_counter() - started), max(cpu, _cpu() - started_cpu)
        print(f"{name:48} {wall:>8.3f} {cpu:>8.3f}")


if __name__ == "__main__":
    main()
