"""Benchmark the luminance watermark beside its previous version and invisible-watermark.

Run from the project root:  .venv/bin/python bench/watermark.py [--ids 5] [--no-svd] [--new-only]
    [--unmarked 1000] [--large-only] [--size-sweep] [--small-sweep] [--baseline COMMIT]

Needs scikit-image (sample photos, SSIM) and, for the peer, invisible-watermark installed
with --no-deps plus PyWavelets (its unused RivaGAN module imports torch, which is stubbed).
"previous version" is the mark before issue 19: media_codecs/image/watermark.py at commit 90aa24d, loaded
from git (the bench needs a clone with its history).
Prints one markdown table: exact-id recovery per attack (issue 19 added aspect-ratio changes,
flips, combinations and a 256-px JPEG 75 re-share), PSNR/SSIM, speed, false ids on unmarked
images; then the 12 MP timings of ours and the previous version (and of this watermark at each
--baseline commit, e.g. the branch point of a change to the reader).
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageEnhance, PngImagePlugin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from media_codecs.image.watermark import embed_luma, extract_luma

ROOT = Path(__file__).resolve().parents[1]
PREVIOUS_COMMIT = "90aa24d"  # the last commit before issue 19's second format


def _module_at(commit: str, path: str, name: str) -> types.ModuleType:
    """A module as it stood at `commit`, read with git show (no frozen copy in the tree)."""
    source = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout
    module = types.ModuleType(name)
    module.__file__ = f"{commit}:{path}"
    sys.modules[name] = module  # dataclasses look their module up while the class body runs
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # our own file, from our history
    return module


previous_version = _module_at(PREVIOUS_COMMIT, "media_codecs/image/watermark.py", "watermark_previous_version")

PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field",
          "immunohistochemistry", "retina", "stereo_motorcycle")
GEOMETRIC = ("crop 10%", "rotate 2°", "resize 75%")


def load_photos() -> dict[str, np.ndarray]:
    import skimage.data

    photos = {}
    for name in PHOTOS:
        image = getattr(skimage.data, name)()
        photos[name] = image[0] if isinstance(image, tuple) else image  # stereo pair: left view
    return photos


# ---------------------------------------------------------------- colour (BT.601 full range, as JPEG)


def rgb_to_ycbcr(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r, g, b = (rgb[..., i].astype(np.float32) for i in range(3))
    y = 0.299 * r + 0.587 * g + 0.114 * b
    cb = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b
    cr = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b
    return y, cb, cr


def ycbcr_to_rgb(y: np.ndarray, cb: np.ndarray, cr: np.ndarray) -> np.ndarray:
    r = y + 1.402 * (cr - 128)
    g = y - 0.344136 * (cb - 128) - 0.714136 * (cr - 128)
    b = y + 1.772 * (cb - 128)
    return np.clip(np.rint(np.stack([r, g, b], axis=-1)), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------- attacks (RGB uint8 -> RGB uint8)


def _encode(rgb: np.ndarray, fmt: str, **options) -> np.ndarray:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, fmt, **options)
    buffer.seek(0)
    return np.array(Image.open(buffer).convert("RGB"))


def png_round_trip(rgb):
    return _encode(rgb, "PNG")


def metadata_strip(rgb):
    info = PngImagePlugin.PngInfo()
    info.add_text("c2pa", "provenance manifest would be here")
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "PNG", pnginfo=info)
    buffer.seek(0)
    stripped = Image.open(buffer)
    return _encode(np.array(stripped.convert("RGB")), "PNG")  # re-saved without the text chunk


def jpeg(quality: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda rgb: _encode(rgb, "JPEG", quality=quality)  # Pillow default: 4:2:0 subsampling


def resize_half_and_back(rgb):
    height, width = rgb.shape[:2]
    small = Image.fromarray(rgb).resize((width // 2, height // 2), Image.Resampling.BICUBIC)
    return np.array(small.resize((width, height), Image.Resampling.BICUBIC))


def png_to_jpeg(rgb):
    return _encode(png_round_trip(rgb), "JPEG", quality=85)


def webp(rgb):
    return _encode(rgb, "WEBP", quality=80)


def brightness(rgb):
    return np.array(ImageEnhance.Brightness(Image.fromarray(rgb)).enhance(1.1))


def contrast(rgb):
    return np.array(ImageEnhance.Contrast(Image.fromarray(rgb)).enhance(1.2))


def gaussian_noise(rgb):
    rng = np.random.default_rng(int(rgb[::7, ::7].sum()) % 2**32)
    return np.clip(np.rint(rgb + rng.normal(0, 5, rgb.shape)), 0, 255).astype(np.uint8)


def crop_border(rgb):
    height, width = rgb.shape[:2]
    dy, dx = round(height * 0.05), round(width * 0.05)
    return np.ascontiguousarray(rgb[dy : height - dy, dx : width - dx])


def rotate_2(rgb):
    return np.array(Image.fromarray(rgb).rotate(2, resample=Image.Resampling.BICUBIC))


def resize_75(rgb):
    height, width = rgb.shape[:2]
    size = (round(width * 0.75), round(height * 0.75))
    return np.array(Image.fromarray(rgb).resize(size, Image.Resampling.BICUBIC))


def scale_xy(sx: float, sy: float) -> Callable[[np.ndarray], np.ndarray]:
    """Width and height scaled independently (a change of aspect ratio)."""
    def attack(rgb):
        height, width = rgb.shape[:2]
        size = (round(width * sx), round(height * sy))
        return np.array(Image.fromarray(rgb).resize(size, Image.Resampling.BICUBIC))
    return attack


def flip_h(rgb):
    return np.ascontiguousarray(rgb[:, ::-1])


def flip_v(rgb):
    return np.ascontiguousarray(rgb[::-1])


def chain(*attacks: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    def attack(rgb):
        for apply in attacks:
            rgb = apply(rgb)
        return rgb
    return attack


SMALL_SIDE, SMALL_SOURCE_MIN = 256, 512


def small_reshare(rgb):
    """Scaled so its short side is 256 px (Pillow's antialiasing Lanczos), saved as JPEG 75.
    None (not counted) when the original's short side is under 512 px: the issue's condition."""
    height, width = rgb.shape[:2]
    if min(height, width) < SMALL_SOURCE_MIN:
        return None
    factor = SMALL_SIDE / min(height, width)
    size = (max(SMALL_SIDE, round(width * factor)), max(SMALL_SIDE, round(height * factor)))
    return _encode(np.array(Image.fromarray(rgb).resize(size, Image.Resampling.LANCZOS)), "JPEG", quality=75)


ATTACKS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "none (PNG)": png_round_trip,
    "metadata strip": metadata_strip,
    "JPEG 90": jpeg(90),
    "JPEG 75": jpeg(75),
    "JPEG 50": jpeg(50),
    "resize 50% and back": resize_half_and_back,
    "PNG to JPEG 85": png_to_jpeg,
    "WebP 80": webp,
    "brightness +10%": brightness,
    "contrast 1.2": contrast,
    "noise sigma 5": gaussian_noise,
    "crop 10%": crop_border,
    "rotate 2°": rotate_2,
    "resize 75%": resize_75,
    # issue 19: aspect-ratio changes, mirror flips, combinations and a small re-shared copy
    "scale x1.0 y0.8": scale_xy(1.0, 0.8),
    "scale x0.8 y1.0": scale_xy(0.8, 1.0),
    "scale x1.25 y1.0": scale_xy(1.25, 1.0),
    "scale x1.0 y1.25": scale_xy(1.0, 1.25),
    "scale x0.9 y1.1": scale_xy(0.9, 1.1),
    "flip horizontal": flip_h,
    "flip vertical": flip_v,
    "flip h + JPEG 75": chain(flip_h, jpeg(75)),
    "flip v + crop 10%": chain(flip_v, crop_border),
    "flip h + rotate 2°": chain(flip_h, rotate_2),
    "scale x1.0 y0.8 + JPEG 75": chain(scale_xy(1.0, 0.8), jpeg(75)),
    "scale x1.2 y1.0 + crop 10%": chain(scale_xy(1.2, 1.0), crop_border),
    "scale x0.9 y1.1 + rotate 2°": chain(scale_xy(0.9, 1.1), rotate_2),
    "flip h + scale x0.85 y1.0 + WebP 80": chain(flip_h, scale_xy(0.85, 1.0), webp),
    "small re-share (256 px, JPEG 75)": small_reshare,
}
NEW_ATTACKS = tuple(list(ATTACKS)[14:])


# ---------------------------------------------------------------- marking schemes


class Ours:
    name = "ours (DFT tiles)"

    def embed(self, rgb: np.ndarray, mark_id: int) -> np.ndarray:
        y, cb, cr = rgb_to_ycbcr(rgb)
        return ycbcr_to_rgb(embed_luma(y, mark_id), cb, cr)

    def extract(self, rgb: np.ndarray) -> int | None:
        return extract_luma(rgb_to_ycbcr(rgb)[0])


class Previous(Ours):
    """This watermark before issue 19 (PREVIOUS_COMMIT's module, from git), for comparison."""

    name = "previous version"

    def embed(self, rgb: np.ndarray, mark_id: int) -> np.ndarray:
        y, cb, cr = rgb_to_ycbcr(rgb)
        return ycbcr_to_rgb(previous_version.embed_luma(y, mark_id), cb, cr)

    def extract(self, rgb: np.ndarray) -> int | None:
        return previous_version.extract_luma(rgb_to_ycbcr(rgb)[0])


class Peer:
    def __init__(self, method: str):
        if "torch" not in sys.modules:
            sys.modules["torch"] = types.ModuleType("torch")  # only RivaGAN (unused) needs it
        from imwatermark import WatermarkDecoder, WatermarkEncoder

        self.method, self.name = method, f"imwatermark {method}"
        self._encoder_cls, self._decoder = WatermarkEncoder, WatermarkDecoder("bytes", 64)

    def embed(self, rgb: np.ndarray, mark_id: int) -> np.ndarray:
        encoder = self._encoder_cls()
        encoder.set_watermark("bytes", mark_id.to_bytes(8, "big"))
        bgr = encoder.encode(np.ascontiguousarray(rgb[..., ::-1]), self.method)
        return np.clip(np.rint(bgr[..., ::-1]), 0, 255).astype(np.uint8)

    def extract(self, rgb: np.ndarray) -> int | None:
        try:
            raw = self._decoder.decode(np.ascontiguousarray(rgb[..., ::-1]), self.method)
        except RuntimeError:  # "image too small, should be larger than 256x256"
            return None
        return int.from_bytes(bytes(raw), "big")  # always some 64 bits: it has no "no mark"


# ---------------------------------------------------------------- metrics


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b) ** 2))
    return 10 * np.log10(255.0**2 / mse) if mse else float("inf")


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    from skimage.metrics import structural_similarity

    return float(structural_similarity(a, b, channel_axis=2, data_range=255))


def megapixels(rgb: np.ndarray) -> float:
    return rgb.shape[0] * rgb.shape[1] / 1e6


def run_scheme(scheme, photos, ids_per_photo: int, seed: int, unmarked, attacks) -> dict:
    rng = np.random.default_rng(seed)
    hits = {attack: 0 for attack in attacks}
    tries = {attack: 0 for attack in attacks}
    trials, psnrs, ssims = 0, [], []
    embed_s = embed_mp = extract_s = extract_mp = all_s = all_mp = 0.0
    for photo in photos.values():
        for _ in range(ids_per_photo):
            mark_id = int(rng.integers(0, 2**63, dtype=np.uint64)) * 2 + int(rng.integers(0, 2))
            start = time.perf_counter()
            signed = scheme.embed(photo, mark_id)
            embed_s += time.perf_counter() - start
            embed_mp += megapixels(photo)
            psnrs.append(psnr(photo, signed))
            ssims.append(ssim(photo, signed))
            trials += 1
            for attack in attacks:
                attacked = ATTACKS[attack](signed)
                if attacked is None:
                    continue  # the attack does not apply to this photo (small re-share of a small one)
                start = time.perf_counter()
                found = scheme.extract(attacked)
                elapsed = time.perf_counter() - start
                all_s, all_mp = all_s + elapsed, all_mp + megapixels(attacked)
                if attack == "none (PNG)":
                    extract_s, extract_mp = extract_s + elapsed, extract_mp + megapixels(attacked)
                hits[attack] += found == mark_id
                tries[attack] += 1
    false_ids = sum(scheme.extract(image) is not None for image in unmarked)
    return {
        "recovery": {attack: (hits[attack], tries[attack]) for attack in attacks},
        "psnr_mean": float(np.mean(psnrs)), "psnr_worst": float(np.min(psnrs)),
        "ssim_mean": float(np.mean(ssims)), "ssim_worst": float(np.min(ssims)),
        "embed_ms_mp": 1e3 * embed_s / embed_mp,
        "extract_ms_mp": 1e3 * extract_s / extract_mp if extract_mp else float("nan"),
        "extract_all_ms_mp": 1e3 * all_s / all_mp if all_mp else float("nan"),
        "false_ids": f"{false_ids}/{len(unmarked)}", "trials": trials,
    }


def _as_rgb(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.dtype == bool:
        image = image.astype(np.uint8) * 255
    elif image.dtype != np.uint8:
        image = np.clip(np.rint(255 * (image - image.min()) / max(float(np.ptp(image)), 1e-9)), 0, 255).astype(np.uint8)
    if image.ndim == 2:
        image = np.stack([image] * 3, axis=-1)
    return np.ascontiguousarray(image[..., :3])


def packaged_images() -> dict[str, np.ndarray]:
    """Every image scikit-image ships and can load offline (the photos above among them), as RGB.
    imageio's standard images, SciPy's datasets and OpenCV's samples are downloads, not bundled."""
    import skimage.data

    images = {}
    for name in skimage.data.__all__:
        loader = getattr(skimage.data, name)
        if name in ("download_all", "data_dir", "file_hash", "lbp_frontal_face_cascade_filename"):
            continue
        try:
            image = loader()
        except Exception:  # the optional pooch downloads are not here
            continue
        if isinstance(image, tuple):
            image = image[0]
        if name == "lfw_subset":  # 200 faces of 25x25: a mosaic of them instead
            image = np.vstack([np.hstack(list(image[row * 10 : row * 10 + 10])) for row in range(20)])
        if getattr(image, "ndim", 0) in (2, 3) and min(image.shape[:2]) >= 64:
            images[name] = _as_rgb(image)
    return images


def synthetic_image(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    kind = int(rng.integers(0, 6))
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    if kind == 0:  # white noise
        return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    if kind == 1:  # smooth noise (clouds)
        small = rng.normal(128, 60, (max(2, height // 32), max(2, width // 32), 3)).astype(np.float32)
        smooth = cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
        return np.clip(np.rint(smooth), 0, 255).astype(np.uint8)
    if kind == 2:  # gradient with a little grain (sky)
        angle = rng.uniform(0, np.pi)
        ramp = (np.cos(angle) * xx + np.sin(angle) * yy) / max(height, width)
        base = 80 + 120 * ramp + rng.normal(0, rng.uniform(0, 3), (height, width))
        return _as_rgb(np.clip(np.rint(base), 0, 255).astype(np.uint8))
    if kind == 3:  # periodic stripes or checks at a random period and angle
        period = rng.uniform(4, 200)
        angle = rng.uniform(0, np.pi)
        wave = np.sin(2 * np.pi * (np.cos(angle) * xx + np.sin(angle) * yy) / period)
        if rng.random() < 0.5:
            wave = wave * np.sin(2 * np.pi * (-np.sin(angle) * xx + np.cos(angle) * yy) / period)
        return _as_rgb(np.clip(np.rint(128 + 100 * wave), 0, 255).astype(np.uint8))
    if kind == 4:  # tiled random texture (a repeating pattern of its own, like a wallpaper)
        tile = rng.integers(0, 256, (int(rng.integers(16, 200)), int(rng.integers(16, 200)), 3), dtype=np.uint8)
        reps = (-(-height // tile.shape[0]), -(-width // tile.shape[1]), 1)
        return np.ascontiguousarray(np.tile(tile, reps)[:height, :width])
    # blocks of flat colour (a graphic)
    small = rng.integers(0, 256, (int(rng.integers(2, 12)), int(rng.integers(2, 12)), 3), dtype=np.uint8)
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_NEAREST)


def unmarked_corpus(count: int, seed: int) -> list[np.ndarray]:
    """``count`` unmarked images: every packaged image, then random crops, rescales (also of the
    aspect ratio), flips, rotations and JPEG copies of them, and synthetic images (a third)."""
    rng = np.random.default_rng(seed)
    sources = list(packaged_images().values())
    corpus = [image for image in sources if min(image.shape[:2]) >= 64][:count]
    while len(corpus) < count:
        if rng.random() < 1 / 3:
            height, width = (int(v) for v in rng.integers(128, 900, 2))
            corpus.append(synthetic_image(rng, height, width))
            continue
        image = sources[int(rng.integers(len(sources)))]
        height, width = image.shape[:2]
        crop_h, crop_w = int(height * rng.uniform(0.4, 1.0)), int(width * rng.uniform(0.4, 1.0))
        top, left = int(rng.integers(0, height - crop_h + 1)), int(rng.integers(0, width - crop_w + 1))
        image = image[top : top + crop_h, left : left + crop_w]
        scale_x, scale_y = rng.uniform(0.5, 1.6), rng.uniform(0.5, 1.6)
        size = (max(64, round(crop_w * scale_x)), max(64, round(crop_h * scale_y)))
        variant = Image.fromarray(np.ascontiguousarray(image)).resize(size, Image.Resampling.BICUBIC)
        if rng.random() < 0.3:
            variant = variant.rotate(float(rng.uniform(-10, 10)), resample=Image.Resampling.BICUBIC)
        variant = np.array(variant)
        if rng.random() < 0.3:
            variant = variant[:, ::-1] if rng.random() < 0.5 else variant[::-1]
        if rng.random() < 0.5:
            variant = _encode(np.ascontiguousarray(variant), "JPEG", quality=int(rng.integers(50, 95)))
        corpus.append(np.ascontiguousarray(variant))
    return corpus


def print_table(results: dict[str, dict], attacks) -> None:
    names = list(results)
    print("| metric | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))

    def cell(hits_tries):
        hits, tries = hits_tries
        return f"{hits / tries:.1%}" if tries else "n/a"

    for attack in attacks:
        label = attack + (" (geometric)" if attack in GEOMETRIC else "") + (" (new)" if attack in NEW_ATTACKS else "")
        print(f"| {label} | " + " | ".join(cell(results[n]["recovery"][attack]) for n in names) + " |")
    rows = [
        ("PSNR mean / worst (dB)", lambda r: f"{r['psnr_mean']:.2f} / {r['psnr_worst']:.2f}"),
        ("SSIM mean / worst", lambda r: f"{r['ssim_mean']:.4f} / {r['ssim_worst']:.4f}"),
        ("embed ms/MP", lambda r: f"{r['embed_ms_mp']:.1f}"),
        ("extract ms/MP (clean)", lambda r: f"{r['extract_ms_mp']:.1f}"),
        ("extract ms/MP (all attacks)", lambda r: f"{r['extract_all_ms_mp']:.1f}"),
        ("false ids on unmarked images", lambda r: r["false_ids"]),
    ]
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(results[n]) for n in names) + " |")


def time_large_image(seed: int, repeats: int = 3, baselines: tuple[str, ...] = ()) -> str:
    """Sign-path budget: a 12 MP (4000x3000) photo-like luminance plane, median of a few runs,
    ours beside the previous version (and beside this watermark at each commit of ``baselines``) in
    the same run, the runs interleaved so that a busy machine slows every version alike."""
    import skimage.data

    from media_codecs.image import watermark

    y = cv2.resize(rgb_to_ycbcr(skimage.data.astronaut())[0], (4000, 3000), interpolation=cv2.INTER_CUBIC)
    unmarked = np.rint(y)
    versions = [("ours", watermark), ("previous version", previous_version)]
    versions += [(f"at {commit}", _module_at(commit, "media_codecs/image/watermark.py", f"watermark_at_{commit}"))
                 for commit in baselines]
    marked = {label: np.clip(np.rint(module.embed_luma(y, seed)), 0, 255) for label, module in versions}
    names = ("embed", "extract", "extract on unmarked")
    runs = {(label, name): [] for label, _ in versions for name in names}
    for _ in range(repeats):
        for label, module in versions:
            calls = ((module.embed_luma, (y, seed)), (module.extract_luma, (marked[label],)),
                     (module.extract_luma, (unmarked,)))
            for name, (function, arguments) in zip(names, calls, strict=True):
                start = time.perf_counter()
                function(*arguments)
                runs[label, name].append(time.perf_counter() - start)
    lines = []
    for label, module in versions:
        parts = [f"{name} {1e3 * float(np.median(runs[label, name])):.0f} ms" for name in names]
        read_ok = module.extract_luma(marked[label]) == seed and module.extract_luma(unmarked) is None
        lines.append(f"12 MP luminance, {label} (median of {repeats}): " + ", ".join(parts)
                     + f"; reads correct: {read_ok}")
    return "\n".join(lines)


def size_sweep(photos, ids_per_photo: int, seed: int, factors=(0.9, 0.75, 0.6, 0.5, 0.45)) -> str:
    """How small a copy may get: each marked photo scaled by a factor (Lanczos) and saved as JPEG 75."""
    rng = np.random.default_rng(seed)
    scheme, hits, trials = Ours(), dict.fromkeys(factors, 0), 0
    for photo in photos.values():
        height, width = photo.shape[:2]
        for _ in range(ids_per_photo):
            mark_id = int(rng.integers(0, 2**63, dtype=np.uint64))
            signed, trials = scheme.embed(photo, mark_id), trials + 1
            for factor in factors:
                size = (round(width * factor), round(height * factor))
                small = np.array(Image.fromarray(signed).resize(size, Image.Resampling.LANCZOS))
                hits[factor] += scheme.extract(_encode(small, "JPEG", quality=75)) == mark_id
    return "copy scaled by (then JPEG 75): " + ", ".join(f"{f:.0%} {hits[f]}/{trials}" for f in factors)


def _to_short_side(rgb: np.ndarray, side: int, resampler: str) -> np.ndarray:
    height, width = rgb.shape[:2]
    factor = side / min(height, width)
    size = (round(width * factor), round(height * factor))
    if resampler == "OpenCV area":
        return cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
    method = {"Lanczos": Image.Resampling.LANCZOS, "bicubic": Image.Resampling.BICUBIC}[resampler]
    return np.array(Image.fromarray(rgb).resize(size, method))


def small_sweep(photos, ids_per_photo: int, seed: int, sides=(384, 320, 256, 224, 192, 160)) -> str:
    """How small a re-shared copy may get: each marked photo of 512 px or more on its short side scaled
    so that its short side is each of ``sides`` (three resamplers), saved as JPEG 75, JPEG 60 and WebP 80."""
    rng = np.random.default_rng(seed)
    scheme = Ours()
    resamplers, encodings = ("Lanczos", "bicubic", "OpenCV area"), (("JPEG", 75), ("JPEG", 60), ("WEBP", 80))
    columns = [(r, e) for r in resamplers for e in encodings]
    hits, trials = {(side, column): 0 for side in sides for column in columns}, 0
    for photo in photos.values():
        if min(photo.shape[:2]) < SMALL_SOURCE_MIN:
            continue
        for _ in range(ids_per_photo):
            mark_id = int(rng.integers(0, 2**63, dtype=np.uint64))
            signed, trials = scheme.embed(photo, mark_id), trials + 1
            for side in sides:
                for resampler in resamplers:
                    small = _to_short_side(signed, side, resampler)
                    for fmt, quality in encodings:
                        copy = _encode(small, fmt, quality=quality)
                        hits[side, (resampler, (fmt, quality))] += scheme.extract(copy) == mark_id
    header = "| short side | " + " | ".join(f"{r}, {f} {q}" for r, (f, q) in columns) + " |"
    lines = [f"{trials} marked photographs of 512 px or more on the short side, exact-id recovery", "",
             header, "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {side} | " + " | ".join(f"{hits[side, c]}/{trials}" for c in columns) + " |" for side in sides]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ids", type=int, default=5, help="random ids per photo (default 5)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--unmarked", type=int, default=1000, help="unmarked images for false ids (default 1000)")
    parser.add_argument("--no-previous", action="store_true", help="skip this watermark's previous version")
    parser.add_argument("--no-peer", action="store_true", help="skip invisible-watermark")
    parser.add_argument("--no-svd", action="store_true", help="skip the slow dwtDctSvd peer")
    parser.add_argument("--photos", nargs="*", default=None, help=f"subset of {', '.join(PHOTOS)}")
    parser.add_argument("--attacks", nargs="*", default=None, help="subset of the attacks (names as printed)")
    parser.add_argument("--new-only", action="store_true", help="only the attacks added by issue 19")
    parser.add_argument("--no-large", action="store_true", help="skip the 12 MP timing")
    parser.add_argument("--large-only", action="store_true", help="only the 12 MP timing")
    parser.add_argument("--baseline", action="append", default=[], metavar="COMMIT",
                        help="also time this watermark as it stood at COMMIT (12 MP timing; repeatable)")
    parser.add_argument("--size-sweep", action="store_true", help="only the read rate of downscaled JPEG copies")
    parser.add_argument("--small-sweep", action="store_true",
                        help="only the read rate of small re-shared copies (by short side, resampler and format)")
    args = parser.parse_args()

    if args.large_only:
        print(time_large_image(args.seed, repeats=5, baselines=tuple(args.baseline)))
        return
    photos = load_photos()
    if args.photos:
        photos = {name: photos[name] for name in args.photos}
    if args.size_sweep:
        print(size_sweep(photos, args.ids, args.seed))
        return
    if args.small_sweep:
        print(small_sweep(photos, args.ids, args.seed))
        return
    attacks = args.attacks or list(NEW_ATTACKS if args.new_only else ATTACKS)
    unmarked = unmarked_corpus(args.unmarked, args.seed)
    schemes = [Ours()] + ([] if args.no_previous else [Previous()])
    if not args.no_peer:
        schemes += [Peer("dwtDct")] + ([] if args.no_svd else [Peer("dwtDctSvd")])
    results = {}
    for scheme in schemes:
        start = time.perf_counter()
        results[scheme.name] = run_scheme(scheme, photos, args.ids, args.seed, unmarked, attacks)
        print(f"{scheme.name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    trials = results[schemes[0].name]["trials"]
    print(f"{len(photos)} photos x {args.ids} ids = {trials} marked images per attack "
          f"(exact 64-bit id recovery; the small re-share only counts photos of 512 px or more on the short "
          f"side); {len(unmarked)} unmarked images\n")
    print_table(results, attacks)
    if not args.no_large:
        print("\n" + time_large_image(args.seed, baselines=tuple(args.baseline)))


if __name__ == "__main__":
    main()
