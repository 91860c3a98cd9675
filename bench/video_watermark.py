"""The video watermark: recovery per attack, the mark's distortion, the time to mark and to read, false ids.

1. Recovery: --clips clips of --seconds at 1920x1080, 30 frames/s, H.264 at 6 Mbit/s (scikit-image photographs
   panned and zoomed, a panned noise texture, high motion, a dark and a flat scene, in turn), each marked with
   its own random id through the codec (embed_watermark: PyAV re-encode), then attacked with the ffmpeg
   binary (ATTACKS) and read (extract_watermark). A copy counts when it gives exactly its clip's id.
2. Distortion: each marked clip against the same clip put through the same re-encode with the mark left out
   (the frame marker swapped for one adding nothing), luminance PSNR and SSIM over every frame.
3. False ids: every unmarked clip and its CRF 23 copy read; any id at all counts.
4. Time (--skip-timing to leave out): a 60 s 1080p30 H.264 clip at 6 Mbit/s with AAC (ffmpeg testsrc2 with
   noise, kept in --cache) marked through the codec (wall and CPU of this process) and read.

    .venv/bin/python bench/video_watermark.py [--clips 6] [--seconds 3] [--cache /tmp/bench-vmark-60s.mp4]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import resource
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import av
import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.video import noise_texture, panned
from media_codecs import get_codec
from media_codecs.video import marking
from tests import video

SIZE, FPS = (1920, 1080), 30
ATTACKS = {
    "H.264 CRF 23": ["-c:v", "libx264", "-crf", "23", "-preset", "veryfast"],
    "H.264 CRF 28": ["-c:v", "libx264", "-crf", "28", "-preset", "veryfast"],
    "H.265 CRF 28": ["-c:v", "libx265", "-crf", "28", "-preset", "ultrafast", "-x265-params", "log-level=error"],
    "VP9 2 Mbit/s": ["-c:v", "libvpx-vp9", "-b:v", "2M", "-deadline", "realtime", "-cpu-used", "8"],
    "scale to 720p": ["-vf", "scale=-2:720", "-c:v", "libx264", "-crf", "23", "-preset", "veryfast"],
    "scale to 480p": ["-vf", "scale=-2:480", "-c:v", "libx264", "-crf", "23", "-preset", "veryfast"],
    "crop 10%": ["-vf", "crop=iw*0.9:ih*0.9", "-c:v", "libx264", "-crf", "23", "-preset", "veryfast"],
    "trim to 2 s": None,  # a random 2 s window: made per clip
    "30 -> 25 fps": ["-r", "25", "-c:v", "libx264", "-crf", "23", "-preset", "veryfast"],
    "hflip": ["-vf", "hflip", "-c:v", "libx264", "-crf", "23", "-preset", "veryfast"],
    "speed +5%": ["-vf", "setpts=PTS/1.05", "-af", "atempo=1.05", "-c:v", "libx264", "-crf", "23",
                  "-preset", "veryfast"],
    "screen recording": ["-vf", "scale=-2:900,eq=gamma=1.2", "-c:v", "libx264", "-crf", "26", "-preset", "veryfast"],
    "platform re-share": ["-vf", "scale=-2:720", "-c:v", "libx264", "-crf", "28", "-preset", "veryfast",
                          "-c:a", "aac", "-b:a", "96k"],
}


def _dark(index: int, width: int, height: int) -> np.ndarray:
    return (panned("camera")(index, width, height).astype(np.float32) * 0.18 + 16).astype(np.uint8)


CONTENT = [("astronaut", panned("astronaut")), ("coffee", panned("coffee")), ("noise", noise_texture),
           ("high motion", video.high_motion), ("dark", _dark), ("flat", video.flat_scene),
           ("chelsea", panned("chelsea")), ("rocket", panned("rocket"))]


def _clip(picture, seconds: float) -> bytes:
    return video.ffmpeg_copy(video.make_video("mp4", size=SIZE, seconds=seconds, fps=FPS, picture=picture,
                                              audio=True, crf=14), "mp4",
                             ["-c:v", "libx264", "-b:v", "6M", "-preset", "veryfast", "-c:a", "copy"])


def _attacked(marked: bytes, attack: str, seconds: float, rng: random.Random) -> bytes:
    arguments = ATTACKS[attack]
    if arguments is None:
        start = rng.uniform(0, max(0.0, seconds - 2.0))
        arguments = ["-ss", f"{start:.3f}", "-t", "2", "-c:v", "libx264", "-crf", "23", "-preset", "veryfast"]
    return video.ffmpeg_copy(marked, "mp4", arguments)


@contextmanager
def _mark_left_out():
    """The same re-encode with a frame marker that adds nothing: the reference for the mark's distortion."""
    original = marking.FrameMarker

    class Unmarked(original):
        def mark(self, luma):
            return np.ascontiguousarray(luma, dtype=np.uint8)

    marking.FrameMarker = Unmarked
    try:
        yield
    finally:
        marking.FrameMarker = original


def _lumas(data: bytes) -> list[np.ndarray]:
    with av.open(io.BytesIO(data)) as container:
        return [frame.to_ndarray(format="gray").astype(np.float64) for frame in container.decode(video=0)]


def _ssim(a: np.ndarray, b: np.ndarray) -> float:
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2

    def blur(x):
        return cv2.GaussianBlur(x, (11, 11), 1.5)

    mu_a, mu_b = blur(a), blur(b)
    var_a, var_b, cov = blur(a * a) - mu_a**2, blur(b * b) - mu_b**2, blur(a * b) - mu_a * mu_b
    return float(np.mean((2 * mu_a * mu_b + c1) * (2 * cov + c2) / ((mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2))))


def _distortion(marked: bytes, reference: bytes) -> tuple[float, float]:
    pairs = list(zip(_lumas(marked), _lumas(reference), strict=False))
    error = np.mean([np.mean((a - b) ** 2) for a, b in pairs])
    return 10 * np.log10(255**2 / max(error, 1e-12)), float(np.mean([_ssim(a, b) for a, b in pairs]))


def recovery(clips: int, seconds: float) -> None:
    codec, rng = get_codec("mp4"), random.Random(2026)
    found = {attack: 0 for attack in ATTACKS}
    psnr, ssim, false_ids, unmarked_reads = [], [], 0, 0
    for index in range(clips):
        name, picture = CONTENT[index % len(CONTENT)]
        clip = _clip(picture, seconds)
        mark_id = rng.getrandbits(64)
        marked = codec.embed_watermark(clip, mark_id)
        with _mark_left_out():
            reference = codec.embed_watermark(clip, mark_id)
        quality = _distortion(marked, reference)
        psnr.append(quality[0])
        ssim.append(quality[1])
        results = []
        for attack in ATTACKS:
            ok = codec.extract_watermark(_attacked(marked, attack, seconds, rng)) == mark_id
            found[attack] += ok
            results.append("." if ok else "x")
        for unmarked in (clip, video.ffmpeg_copy(clip, "mp4", ATTACKS["H.264 CRF 23"])):
            false_ids += codec.extract_watermark(unmarked) is not None
            unmarked_reads += 1
        print(f"clip {index + 1} ({name}): PSNR {quality[0]:.2f} dB, SSIM {quality[1]:.4f}, attacks "
              f"{''.join(results)}", flush=True)
    print(f"\nrecovery of the exact id over {clips} clips of {seconds:g} s, 1080p30:")
    for attack, count in found.items():
        print(f"  {attack:<20} {count}/{clips} ({100 * count / clips:.0f}%)")
    print(f"marked vs unmarked after the same re-encode: mean PSNR {np.mean(psnr):.2f} dB (min {np.min(psnr):.2f}), "
          f"mean SSIM {np.mean(ssim):.4f}")
    print(f"false ids: {false_ids} of {unmarked_reads} unmarked reads")


def timing(cache: Path) -> None:
    if not cache.exists():
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                        "testsrc2=s=1920x1080:r=30:d=60,noise=alls=8:allf=t", "-f", "lavfi", "-i", "sine=d=60",
                        "-c:v", "libx264", "-preset", "veryfast", "-b:v", "6M", "-pix_fmt", "yuv420p",
                        "-c:a", "aac", "-shortest", str(cache)], check=True)
    data = cache.read_bytes()
    codec = get_codec("mp4")
    load = os.getloadavg()[0]
    cpu, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    marked = codec.embed_watermark(data, 0x0123_4567_89AB_CDEF)
    wall, after = time.perf_counter() - wall, resource.getrusage(resource.RUSAGE_SELF)
    used = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    print(f"\nmark a 60 s 1080p30 H.264 clip ({len(data) / 1e6:.1f} MB -> {len(marked) / 1e6:.1f} MB): "
          f"{wall:.1f} s wall, {used:.1f} s CPU (load average {load:.2f} before)")
    wall = time.perf_counter()
    found = codec.extract_watermark(marked)
    verdict = "exact" if found == 0x0123_4567_89AB_CDEF else found
    print(f"read it: {time.perf_counter() - wall:.2f} s wall, id {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bench-vmark-60s.mp4"))
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-recovery", action="store_true")
    arguments = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if not arguments.skip_recovery:
        recovery(arguments.clips, arguments.seconds)
    if not arguments.skip_timing:
        timing(arguments.cache)


if __name__ == "__main__":
    main()
