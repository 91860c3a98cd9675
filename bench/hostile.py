"""Hostile uploads against the public routes: answer time and peak worker memory per case.

Each case runs in a fresh Python process (so its peak RSS is its own) through the whole Django
stack with the test client, on a throwaway SQLite database: POST /v1/verify (multipart) or
/v1/verify/batch (JSON), or POST /v1/sign. Prints one row per case: status, error code, seconds, peak RSS and how
much the request added to the RSS of the warmed-up process. Sign cases sign a photograph-like
image at each format's signing pixel limit (and one just over it).

    .venv/bin/python bench/hostile.py [--only NAME ...] [--timeout 60]
    .venv/bin/python bench/hostile.py --families     (every family's hostile files, JSON and multipart
                                                       cases against a live gunicorn worker: bench/hostile_live.py)
    .venv/bin/python bench/hostile.py --all          (both tables)
    .venv/bin/python bench/hostile.py --families --markdown   (the per-family table of docs/reliability.md)
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import hostile_media as hm  # noqa: E402

MB = hm.MB


def corpus() -> dict[str, tuple[str, Callable[[], bytes | list[bytes]]]]:
    """Case name -> (route, builder). Route "verify" and "sign" take one file, "batch" a list of files."""
    return {
        "jpeg-comments-1.2MB": ("verify", lambda: hm.jpeg_with_empty_comments(int(1.2 * MB))),
        "jpeg-comments-5.5MB": ("verify", lambda: hm.jpeg_with_empty_comments(int(5.5 * MB))),
        "jpeg-comments-50MB": ("verify", lambda: hm.jpeg_with_empty_comments(50 * MB - 4096)),
        "png-chunks-6MB": ("verify", lambda: hm.png_with_empty_chunks(6 * MB)),
        "png-chunks-50MB": ("verify", lambda: hm.png_with_empty_chunks(50 * MB - 4096)),
        "webp-chunks-5.4MB": ("verify", lambda: hm.webp_with_empty_chunks(int(5.4 * MB))),
        "webp-chunks-50MB": ("verify", lambda: hm.webp_with_empty_chunks(50 * MB - 4096)),
        "webp-49MP": ("verify", lambda: hm.pixel_bomb("WEBP")),
        "png-49MP": ("verify", lambda: hm.pixel_bomb("PNG")),
        "jpeg-49MP": ("verify", lambda: hm.pixel_bomb("JPEG")),
        "jpeg-progressive-2000-scans": ("verify", lambda: hm.jpeg_with_many_scans(2000)),
        "batch-50x-webp-49MP": ("batch", lambda: [hm.pixel_bomb("WEBP")] * 50),
        "verify-jpeg-50MP-photo": ("verify", lambda: hm.photo_like("JPEG", 50)),
        "verify-png-50MP": ("verify", lambda: hm.pixel_bomb("PNG", 7000, 7100)),
        "sign-jpeg-25MP": ("sign", lambda: hm.photo_like("JPEG", 25)),
        "sign-png-16.7MP": ("sign", lambda: hm.photo_like("PNG", 16.7)),
        "sign-webp-16.7MP": ("sign", lambda: hm.photo_like("WEBP", 16.7)),
        "sign-jpeg-over-limit": ("sign", lambda: hm.photo_like("JPEG", 25.1)),
        # Audio: the most samples 50 MB can hold (8-bit mono, 18.9 min at 44.1 kHz) and the usual layout.
        "verify-wav-8bit-mono-50MB": ("verify", lambda: hm.wav_of_noise(50 * MB - 4096, channels=1, bits=8)),
        "sign-wav-8bit-mono-50MB": ("sign", lambda: hm.wav_of_noise(50 * MB - 4096, channels=1, bits=8)),
        "verify-wav-16bit-stereo-50MB": ("verify", lambda: hm.wav_of_noise(50 * MB - 4096)),
        "sign-wav-16bit-stereo-50MB": ("sign", lambda: hm.wav_of_noise(50 * MB - 4096)),
        # Songs as they are usually uploaded: 6 minutes of 44.1 kHz stereo, and the longest 50 MB FLAC.
        "sign-flac-6min": ("sign", lambda: hm.music_flac(360)),
        "sign-mp3-6min-192kbps": ("sign", lambda: hm.music_mp3(360)),
        "sign-flac-7.7min-47MB": ("sign", lambda: hm.music_flac(460)),
        "sign-mp3-20min-320kbps": ("sign", lambda: hm.music_mp3(1190, kbps=320)),
        # Video: bench/video.py's 50 MB, 1080p, 60 s H.264 MP4 (made once, about 3.5 minutes, then cached).
        "sign-mp4-1080p-60s-50MB": ("sign", _big_video),
        "verify-mp4-1080p-60s-50MB": ("verify", _big_video),
    }


def _big_video() -> bytes:
    from bench import video

    return video.big_video(Path(tempfile.gettempdir()) / "bench-video-1080p.mp4")


def run_case(name: str, workdir: Path, env: dict, timeout: float) -> dict:
    """Run one case in a fresh process; its row: status, code, seconds, peak_mb, added_mb (or an error)."""
    route, build = corpus()[name]
    content = build()
    blob = content if isinstance(content, bytes) else _joined(content)
    case = workdir / name
    case.with_name(name + ".bin").write_bytes(blob)
    case.write_text(json.dumps({"route": route}))
    try:
        done = subprocess.run([sys.executable, __file__, "--child", str(case)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"bytes": len(blob), "error": "timeout"}
    if done.returncode != 0:
        return {"bytes": len(blob), "error": (done.stderr.strip().splitlines() or ["crash"])[-1][:120]}
    return {"bytes": len(blob), **json.loads(done.stdout.strip().splitlines()[-1])}


def prepared_environment(workdir: Path) -> dict:
    """Environment of the child processes, with a migrated throwaway SQLite database in `workdir`."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true",
           "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "VERIFY_RATE_PER_MINUTE": "100000"}
    env.pop("REDIS_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return env


def _child(path: str) -> None:
    """Run one case (called in the fresh process): warm up, then time the request."""
    import django

    django.setup()
    from django.test import Client

    route, content = json.loads(Path(path).read_text())["route"], Path(path + ".bin").read_bytes()
    client = Client()
    client.get("/v1/openapi.json")  # import and warm everything a request touches
    fields = _signing_fields(client) if route == "sign" else {}
    baseline = _rss_kb("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")  # restart the high-water mark here
    started = time.perf_counter()
    if route in ("verify", "sign"):
        from django.core.files.uploadedfile import SimpleUploadedFile

        fields["content"] = SimpleUploadedFile("f", content)
        response = client.post(f"/v1/{route}", fields)
    else:
        items = [{"content": base64.b64encode(item).decode()} for item in _split(content)]
        response = client.post("/v1/verify/batch", json.dumps({"items": items}), content_type="application/json")
    seconds = time.perf_counter() - started
    peak = _rss_kb("VmHWM:")
    body = response.json() if response["Content-Type"] == "application/json" else {"reason": _signed(response)}
    code = body.get("error") if isinstance(body, dict) else (body[0].get("reason") if body else None)
    print(json.dumps({"status": response.status_code, "code": code or body.get("reason"), "seconds": seconds,
                      "peak_mb": peak / 1024, "added_mb": (peak - baseline) / 1024}))


def _signed(response) -> str:
    """"signed+mark" when the signed file carries a watermark, "signed" when it carries its token alone."""
    from provenance.models import Record
    from provenance.signing import NO_WATERMARK

    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    return "signed+mark" if record.watermark_id != NO_WATERMARK else "signed"


def _signing_fields(client) -> dict:
    from tests import factories

    org = factories.make_org(plan="enterprise")
    generator = factories.make_generator(org=org, formats=["image", "audio", "text", "video"])
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {factories.make_api_key(org=org)}"
    return {"model": "bench", "generator_id": str(generator.pk)}


def _rss_kb(field: str) -> int:
    # VmHWM (reset through clear_refs), not ru_maxrss: Linux carries a parent's ru_maxrss over fork
    # and exec, and the parent holds the whole corpus.
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith(field)).split()[1])


def _split(blob: bytes) -> list[bytes]:
    count = int.from_bytes(blob[:4], "big")
    items, position = [], 4
    for _ in range(count):
        size = int.from_bytes(blob[position : position + 4], "big")
        items.append(blob[position + 4 : position + 4 + size])
        position += 4 + size
    return items


def _joined(items: list[bytes]) -> bytes:
    return len(items).to_bytes(4, "big") + b"".join(len(i).to_bytes(4, "big") + i for i in items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--child")
    parser.add_argument("--families", action="store_true", help="only the per-family table (live server)")
    parser.add_argument("--all", action="store_true", help="the fresh-process table, then the per-family table")
    parser.add_argument("--markdown", action="store_true", help="the per-family table as in docs/reliability.md")
    args = parser.parse_args()
    if args.child:
        return _child(args.child)
    if not args.families:
        _fresh_process_table(args)
    if args.families or args.all:
        from bench import hostile_live

        print()
        rows = hostile_live.all_rows(Path(tempfile.mkdtemp(prefix="hostile-live-")))
        (hostile_live.print_markdown if args.markdown else hostile_live.print_rows)(rows)


def _fresh_process_table(args) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="hostile-"))
    env = prepared_environment(workdir)
    print(f"{'case':32} {'bytes':>10} {'status':>6} {'code':>22} {'seconds':>8} {'peak MB':>8} {'added MB':>9}")
    for name in corpus():
        if args.only and name not in args.only:
            continue
        row = run_case(name, workdir, env, args.timeout)
        if "error" in row:
            print(f"{name:32} {row['bytes']:>10} {'-':>6} {row['error']:>22}")
            continue
        print(f"{name:32} {row['bytes']:>10} {row['status']:>6} {row['code']!s:>22} {row['seconds']:>8.2f} "
              f"{row['peak_mb']:>8.0f} {row['added_mb']:>9.0f}")


if __name__ == "__main__":
    main()
