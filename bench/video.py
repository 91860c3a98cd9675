"""Video codec work per request, and how well the fingerprint set finds copies without the token.

1. Cost: a 1080p, 60 s H.264 MP4 of about 50 MB (6.7 Mbit/s; made with PyAV once and kept in
   --cache) is signed and verified at codec level, each in a fresh process: open + embed_token +
   strip_token + fingerprints (sign side), open + extract_token + strip_token + fingerprint (verify
   side). Reports wall time and the process's peak RSS (`resource.getrusage`, interpreter and imports
   included). Targets: 1.5 s and 300 MB each.
2. Recovery: 8 synthetic clips (a moving gradient, a panned noise texture, moving shapes, scrolling
   text, four scikit-image photographs panned and zoomed), 960x540, 8 s at 25 frames/s. Each is
   fingerprinted (the stored set), then remuxed to MKV, re-encoded at CRF 28, scaled to 360 lines (the
   1080p-to-720p ratio), cut (re-encoded from 2 s, from 2.5 s, from 6 s) and cut by stream copy at the
   keyframe after 4.5 s. A copy is found when its first frame's pHash is within 7 bits
   (verification.selectors.PHASH_MAX_DISTANCE) of any stored value of its original.
3. False matches: 1,000 unrelated frames (other clips' frames, scikit-image photographs cropped, zoomed
   and flipped, noise) against every stored set: a frame counts once if it matches any other clip's set.

    .venv/bin/python bench/video.py [--cache /tmp/bench-video-1080p.mp4] [--skip-cost] [--skip-recovery]
"""

import argparse
import io
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from media_codecs.image.phash import phash_hex
from media_codecs.video import frames
from tests import video

THRESHOLD = 7  # verification/selectors.py PHASH_MAX_DISTANCE (importing it needs Django settings)
TOKEN = "svc_0123456789abcdef.bench-token"
SIZE = (960, 540)
FPS = 25


# --- content ------------------------------------------------------------------------------------------

def _photo(name: str) -> np.ndarray:
    from skimage import data

    image = np.asarray(getattr(data, name)())
    if image.ndim == 2:
        image = np.stack([image] * 3, axis=-1)
    return image[..., :3].astype(np.uint8)


def panned(name: str, zoom_per_frame: float = 0.002, pan: int = 3):
    """A photograph scaled up to cover the frame, panned right and zoomed in over time."""
    source = Image.fromarray(_photo(name))

    def picture(index: int, width: int, height: int) -> np.ndarray:
        scale = max(width / source.width, height / source.height) * (1.3 + zoom_per_frame * index)
        big = source.resize((round(source.width * scale), round(source.height * scale)), Image.Resampling.BILINEAR)
        left = min(pan * index, big.width - width)
        top = (big.height - height) // 2
        return np.asarray(big.crop((left, top, left + width, top + height)))
    return picture


def noise_texture(index: int, width: int, height: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    base = Image.fromarray(rng.integers(0, 256, (height // 8, width // 4 + 64, 3), dtype=np.uint8))
    texture = np.asarray(base.resize((width * 2 + 512, height), Image.Resampling.BICUBIC))
    return np.ascontiguousarray(texture[:, 4 * index : 4 * index + width])


def shapes(index: int, width: int, height: int) -> np.ndarray:
    rng = np.random.default_rng(11)
    image = Image.new("RGB", (width, height), (30, 40, 60))
    draw = ImageDraw.Draw(image)
    for k in range(12):
        x, y, r = rng.integers(0, width), rng.integers(0, height), rng.integers(20, 90)
        dx, dy = rng.integers(-6, 7), rng.integers(-6, 7)
        cx, cy = (x + dx * index) % width, (y + dy * index) % height
        colour = tuple(int(c) for c in rng.integers(40, 256, 3))
        (draw.ellipse if k % 2 else draw.rectangle)((cx - r, cy - r, cx + r, cy + r), fill=colour)
    return np.asarray(image)


def scrolling_text(index: int, width: int, height: int) -> np.ndarray:
    image = Image.new("RGB", (width, height), (245, 240, 225))
    draw = ImageDraw.Draw(image)
    for line in range(40):
        y = line * 28 - 3 * index
        if -30 < y < height:
            draw.text((40 + (line % 5) * 30, y), f"Line {line}: the quick brown fox jumps over {line * 7} lazy dogs",
                      fill=(20, 20, 20), font_size=22)
    return np.asarray(image)


def clips_content() -> dict:
    """The eight clips' pictures (built on demand: scikit-image's photographs are not loaded for --measure)."""
    return {"gradient": video.moving_gradient, "noise": noise_texture, "shapes": shapes, "text": scrolling_text,
            "astronaut": panned("astronaut"), "coffee": panned("coffee", pan=4),
            "rocket": panned("rocket", 0.004, 2), "hubble": panned("hubble_deep_field", 0.003, 5)}

TRANSFORMS = {
    "remux to MKV": lambda d: (video.remux(d, "mp4", "mkv"), "matroska"),
    "re-encode CRF 28": lambda d: (video.reencode(d, "mp4", crf=28), "mov"),
    "scale to 360 lines": lambda d: (video.reencode(d, "mp4", height=360, crf=23), "mov"),
    "cut first 2 s": lambda d: (video.reencode(d, "mp4", start=2.0, crf=23), "mov"),
    "cut first 2.5 s": lambda d: (video.reencode(d, "mp4", start=2.5, crf=23), "mov"),
    "cut first 6 s": lambda d: (video.reencode(d, "mp4", start=6.0, crf=23), "mov"),
    "copy cut at keyframe >= 4.5 s": lambda d: (video.remux(d, "mp4", "mp4", start=4.5), "mov"),
}


def _distance(value: str, stored: list[str]) -> int:
    return min((int(value, 16) ^ int(other, 16)).bit_count() for other in stored)


def recovery() -> dict[str, list[str]]:
    """Print the recovery table; return each clip's stored set."""
    sets, rows = {}, {name: [] for name in TRANSFORMS}
    clips = {}
    for name, picture in clips_content().items():
        # keyint 75: keyframes every 3 s, so the copy cut has a keyframe after 4.5 s to start at
        clips[name] = video.make_video("mp4", size=SIZE, seconds=8.0, fps=FPS, picture=picture, bitrate=2_000_000,
                                       keyint=75)
        started = time.perf_counter()
        sets[name] = frames.fingerprint_set(clips[name], "mov")
        print(f"{name:10s} set of {len(sets[name])} in {time.perf_counter() - started:.2f} s", flush=True)
        for transform, make in TRANSFORMS.items():
            copy, demuxer = make(clips[name])
            rows[transform].append(_distance(frames.first_frame_phash(copy, demuxer), sets[name]))
    print(f"\n{'copy':32s} found   distances to the nearest stored value (per clip)")
    for transform, distances in rows.items():
        found = sum(d <= THRESHOLD for d in distances)
        print(f"{transform:32s} {found}/{len(distances)}    {distances}")
    return sets, clips


def unrelated_frames(clips: dict[str, bytes]) -> list[tuple[str | None, str]]:
    """1,000 (source clip or None, pHash) pairs."""
    import av

    values: list[tuple[str | None, str]] = []
    for name, data in clips.items():  # 15 frames of each clip, spread over its 8 s: 120
        with av.open(io.BytesIO(data)) as container:
            for index, frame in enumerate(container.decode(video=0)):
                if index % 13 == 6 and sum(1 for owner, _ in values if owner == name) < 15:
                    values.append((name, phash_hex(frame.to_image())))
    rng = np.random.default_rng(3)
    names = ["astronaut", "coffee", "chelsea", "camera", "rocket", "cat", "immunohistochemistry", "hubble_deep_field",
             "retina", "coins", "moon", "page", "text", "brick", "grass", "gravel", "colorwheel", "horse", "clock"]
    while len(values) < 700:  # photographs: random crops, zooms and flips
        image = Image.fromarray(_photo(names[len(values) % len(names)]))
        w, h = image.size
        cw, ch = int(w * rng.uniform(0.4, 1)), int(h * rng.uniform(0.4, 1))
        left, top = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        crop = image.crop((left, top, left + cw, top + ch))
        if rng.random() < 0.5:
            crop = crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        values.append((None, phash_hex(crop)))
    while len(values) < 1000:  # noise, from fine to blotchy
        cells = int(rng.integers(2, 64))
        noise = Image.fromarray(rng.integers(0, 256, (cells, cells, 3), dtype=np.uint8)).resize((256, 256))
        values.append((None, phash_hex(noise)))
    return values


def false_matches(sets: dict[str, list[str]], clips: dict[str, bytes]) -> None:
    values = unrelated_frames(clips)
    matched = comparisons = 0
    for owner, value in values:
        others = [stored for name, stored in sets.items() if name != owner]
        comparisons += sum(len(stored) for stored in others)
        matched += any(_distance(value, stored) <= THRESHOLD for stored in others)
    print(f"\nfalse matches: {matched} of {len(values)} unrelated frames matched some stored set "
          f"({comparisons:,} comparisons against {sum(len(s) for s in sets.values())} stored values)")


# --- cost -----------------------------------------------------------------------------------------------

def big_video(path: Path) -> bytes:
    if path.exists():
        return path.read_bytes()
    started = time.perf_counter()
    data = video.make_video("mp4", size=(1920, 1080), seconds=60.0, fps=30, picture=_big_picture(),
                            bitrate=6_700_000, preset="ultrafast")
    path.write_bytes(data)
    print(f"made {path} ({len(data) / 1e6:.1f} MB) in {time.perf_counter() - started:.0f} s", flush=True)
    return data


def _big_picture():
    photo = panned("astronaut", 0.0005, 2)
    grain = [np.random.default_rng(seed).integers(-12, 13, (1080, 1920, 1), dtype=np.int16) for seed in range(6)]

    def picture(index: int, width: int, height: int) -> np.ndarray:
        base = photo(index, width, height).astype(np.int16)
        return np.clip(base + grain[index % len(grain)], 0, 255).astype(np.uint8)
    return picture


def measure(side: str, path: str) -> None:
    """In a fresh process: time one side's codec work and print it with the peak RSS as JSON."""
    from media_codecs import detect

    data = Path(path).read_bytes()
    started = time.perf_counter()
    codec = detect(data)
    if side == "sign":
        signed = codec.open(codec.embed_token(codec.open(data), TOKEN))
        codec.strip_token(signed)
        result = len(codec.fingerprints(signed))
    else:
        media = codec.open(data)
        assert codec.extract_token(media) == TOKEN
        codec.strip_token(media)
        result = codec.fingerprint(media)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"side": side, "seconds": elapsed, "peak_mb": peak, "result": result}))


def cost(path: Path) -> None:
    data = big_video(path)
    from media_codecs import detect

    codec = detect(data)
    signed_path = path.with_suffix(".signed.mp4")
    signed_path.write_bytes(codec.embed_token(data, TOKEN))
    print(f"\n{'side':8s} {'seconds':>8s} {'peak RSS MB':>12s}   ({len(data) / 1e6:.1f} MB, 1920x1080, 60 s)")
    for side, file in (("sign", path), ("verify", signed_path)):
        runs = [json.loads(subprocess.run([sys.executable, __file__, "--measure", side, str(file)], check=True,
                                          capture_output=True, text=True).stdout) for _ in range(3)]
        best = min(runs, key=lambda run: run["seconds"])
        print(f"{side:8s} {best['seconds']:8.2f} {max(r['peak_mb'] for r in runs):12.0f}   "
              f"(best of 3; result {best['result']})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default="/tmp/bench-video-1080p.mp4")
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--skip-recovery", action="store_true")
    parser.add_argument("--measure", nargs=2, metavar=("SIDE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return
    if not args.skip_cost:
        cost(Path(args.cache))
    if not args.skip_recovery:
        sets, clips = recovery()
        false_matches(sets, clips)


if __name__ == "__main__":
    main()
