"""The verification cost budget: the worker CPU of the worst requests it admits, per family, and how soon it
refuses the ones over it (verification/services.py REQUEST_UNITS).

Every request runs through the whole stack (Django, DRF, the codecs) with the test client in one process,
on a throwaway SQLite database, the per-IP limit out of the way; CPU is this process's (user + system)
across the request, as a worker would spend it. Each case runs once to warm up and then --runs times;
the worst run is printed.

    nice -n 10 .venv/bin/python bench/verify_budget.py [--runs 3] [--only NAME ...]
"""

import argparse
import base64
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cases() -> dict:
    """name -> (route, builder): route "verify", "batch" or "byContent"; a batch builder returns a list."""
    from tests import audio as ta
    from tests import hostile_media as hm
    from tests import video as tv

    mb = hm.MB

    def zero_width_text(total: int) -> bytes:
        return ("a\u200bb\u200c " * (total // 9)).encode()

    def mp3_clip() -> bytes:
        return ta.lame_mp3(ta.noise(12, channels=1), kbps=32)

    return {
        # admitted: the largest of each family
        "image: JPEG 49 MP photo": ("verify", lambda: hm.photo_like("JPEG", 49)),
        "image: WebP 49 MP photo": ("verify", lambda: hm.photo_like("WEBP", 49)),
        "image: PNG 25 MP photo": ("verify", lambda: hm.photo_like("PNG", 25)),
        "image: PNG 49 MP flat (pixel bomb)": ("verify", lambda: hm.pixel_bomb("PNG", 7000, 7000)),
        "audio: WAV 16-bit stereo 50 MB (30 s read)": ("verify", lambda: hm.wav_of_noise(50 * mb - 4096)),
        "audio: FLAC 5 min music (30 s read)": ("verify", lambda: hm.music_flac(300)),
        "audio: MP3 12 s 32 kbps": ("verify", mp3_clip),
        "audio: MP3 6 min 192 kbps (30 s read)": ("verify", lambda: hm.music_mp3(360)),
        "video: MP4 4K 2 s": ("verify", lambda: tv.make_video("mp4", size=(3840, 2160), seconds=2)),
        "video: MP4 1080p 10 s": ("verify", lambda: tv.make_video("mp4", size=(1920, 1080), seconds=10)),
        "text: 20 MB with zero-width characters": ("verify", lambda: zero_width_text(20 * mb)),
        "byContent: JPEG 49 MP photo": ("byContent", lambda: hm.photo_like("JPEG", 49)),
        "batch: 16 x 1 MP JPEG photo": ("batch", lambda: [hm.photo_like("JPEG", 1)] * 16),
        "batch: 1 x 12 s MP3 + 6 x 1 MP JPEG": ("batch", lambda: [mp3_clip()] + [hm.photo_like("JPEG", 1)] * 6),
        "batch: 50 x 64x48 PNG": ("batch", lambda: [hm._small_image("PNG")] * 50),
        # over the budget: refused before decoding
        "over: batch 50 x 12 s 32 kbps MP3": ("batch", lambda: [mp3_clip()] * 50),
        "over: batch 20 x 12 s FLAC": ("batch", lambda: [ta.flac_bytes(ta.tone(12, channels=1))] * 20),
        "over: batch 10 x 12 s WAV": ("batch", lambda: [ta.wav_bytes(ta.noise(12, rate=8000, channels=1),
                                                                     rate=8000)] * 10),
        "over: batch 2 x 49 MP JPEG": ("batch", lambda: [hm.photo_like("JPEG", 49)] * 2),
    }


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _request(client, route: str, content):
    if route == "batch":
        items = [{"content": base64.b64encode(item).decode()} for item in content]
        return client.post("/v1/verify/batch", json.dumps({"items": items}), content_type="application/json")
    from django.core.files.uploadedfile import SimpleUploadedFile

    path = "/v1/verify" if route == "verify" else "/v1/c2pa/matches/byContent"
    return client.post(path, {"content": SimpleUploadedFile("f", content)})


def _units(route: str, content) -> float:
    from media_codecs.errors import CodecError
    from verification.services import content_open, content_units

    total = 0.0
    for item in content if route == "batch" else [content]:
        try:
            total += content_units(item, content_open(item))
        except CodecError:
            total += 0
        except Exception:  # over a format limit: refused as such
            return float("nan")
    return total


def _child(runs: int, only: list[str]) -> None:
    import django

    django.setup()
    from django.test import Client

    client = Client()
    client.get("/v1/openapi.json")
    for name, (route, build) in _cases().items():
        if only and not any(part in name for part in only):
            continue
        content = build()
        _request(client, route, content)  # warm: imports, caches, allocator
        worst_cpu = worst_wall = 0.0
        for _ in range(runs):
            wall, cpu = time.perf_counter(), _cpu()
            response = _request(client, route, content)
            worst_cpu = max(worst_cpu, _cpu() - cpu)
            worst_wall = max(worst_wall, time.perf_counter() - wall)
        size = sum(map(len, content)) if route == "batch" else len(content)
        print("ROW " + json.dumps({"case": name, "status": response.status_code, "units": _units(route, content),
                          "mb": size / 1e6, "cpu_ms": worst_cpu * 1e3, "wall_ms": worst_wall * 1e3}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.runs, args.only)
        return
    with tempfile.TemporaryDirectory() as workdir:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true",
               "ALLOWED_HOSTS": "testserver", "DATABASE_URL": f"sqlite:///{workdir}/db.sqlite3",
               "VERIFY_RATE_PER_MINUTE": "100000000"}
        env.pop("REDIS_URL", None)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        print("| case | status | units | MB | worst CPU ms | worst wall ms |")
        print("|---|---|---|---|---|---|")
        child = subprocess.Popen([sys.executable, __file__, "--child", "--runs", str(args.runs), "--only", *args.only],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for line in child.stdout:
            if not line.startswith("ROW "):
                continue  # the access log
            row = json.loads(line[4:])
            print(f"| {row['case']} | {row['status']} | {row['units']:.1f} | {row['mb']:.1f} | {row['cpu_ms']:.0f} | "
                  f"{row['wall_ms']:.0f} |", flush=True)
        child.wait()
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
