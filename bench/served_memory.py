"""Peak and after-request resident memory of a served gunicorn worker for one large upload.

bench/hostile.py measures in a process that also runs the Django test client, which holds the file
it uploads and the multipart body it builds. Here a real gunicorn worker (1 worker, production's class,
the repository's gunicorn.conf.py) serves `curl`. Per case, a fresh server: the worker is warmed by
one small verification (its idle size), then serves the case (the "fresh" columns), then the 49 MP
WebP (a large request before), then the case again (the "after a large one" columns). For each
measured request: the worker's peak RSS during it (VmHWM, reset first through /proc/<pid>/clear_refs)
and its RSS once the request is over. A worker that restarts itself after a request (it grew past its
bound) is followed to its replacement; the row says so.

    .venv/bin/python bench/served_memory.py [--case webp-49MP png-49MP-rgb ...] [--database-url ...]
"""

import argparse
import contextlib
import io
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import hostile, serve

MB = 1024 * 1024


def _flat(fmt: str, width: int = 7000, height: int = 7000, mode: str = "RGB", **options) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new(mode, (width, height), (128, 90, 60)[: len(mode)] if len(mode) > 1 else 128).save(buffer, fmt, **options)
    return buffer.getvalue()


def _video_4k() -> bytes:
    from tests import video

    return video.make_video("mp4", size=(3840, 2160), seconds=2.0, fps=5, preset="ultrafast")


def _pdf_50mb() -> bytes:
    """A one-page PDF carrying a 49 MB uncompressed binary stream (an embedded image, say)."""
    import os

    from tests.pdf_samples import assemble_pdf, simple_objects

    payload = os.urandom(49 * MB)
    objects = simple_objects()
    objects[6] = b"<</Length " + str(len(payload)).encode() + b">>\nstream\n" + payload + b"\nendstream"
    return assemble_pdf(objects)


def _text_49mb() -> bytes:
    return b"Many words on many lines of plain text.\n" * (49 * MB // 40)


def cases() -> dict[str, tuple[str, Callable[[], bytes]]]:
    """Case name -> (route, builder). Routes: verify, byContent (multipart), sign."""
    from tests import hostile_media as hm

    big = hostile.corpus()
    return {
        "webp-49MP": ("verify", lambda: hm.pixel_bomb("WEBP")),
        "webp-49MP-byContent": ("byContent", lambda: hm.pixel_bomb("WEBP")),
        "png-49MP-rgb": ("verify", lambda: _flat("PNG")),
        "png-49MP-rgba": ("verify", lambda: _flat("PNG", mode="RGBA")),
        "jpeg-50MP-photo": ("verify", big["verify-jpeg-50MP-photo"][1]),
        "webp-49MP-photo": ("verify", lambda: hm.photo_like("WEBP", 49)),
        "mp4-4K-frames": ("verify", _video_4k),
        "wav-8bit-mono-50MB": ("verify", big["verify-wav-8bit-mono-50MB"][1]),
        "mp3-20min-320kbps": ("verify", big["sign-mp3-20min-320kbps"][1]),
        "text-49MB": ("verify", _text_49mb),
        "pdf-49MB": ("verify", _pdf_50mb),
        "mp4-1080p-60s-50MB": ("verify", big["verify-mp4-1080p-60s-50MB"][1]),
        "sign-mp4-1080p-60s-50MB": ("sign", big["sign-mp4-1080p-60s-50MB"][1]),
    }


def small_files() -> list[bytes]:
    """One small file of each family and format the cases use."""
    from tests import audio, media, pdf_samples, video

    tone = audio.tone(2.0)
    return [media.photo_bytes(), media.photo_bytes(fmt="png"), media.photo_bytes(fmt="webp"),
            audio.wav_bytes(tone), audio.lame_mp3(tone), video.make_video("mp4"),
            b"A few words of plain text, enough to be read as text.\n" * 20, pdf_samples.text_pdf()]


DEFAULT_CASES = ["webp-49MP", "webp-49MP-byContent", "png-49MP-rgb", "png-49MP-rgba", "jpeg-50MP-photo",
                 "webp-49MP-photo", "mp4-4K-frames", "wav-8bit-mono-50MB", "mp3-20min-320kbps", "text-49MB",
                 "pdf-49MB"]


def worker_pids(master: int) -> list[int]:
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def vm_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    raise RuntimeError(field)


def settled_rss_kb(pid: int, seconds: float = 1.0) -> int:
    """RSS once the worker is done with the request: curl returns when the response is sent, and the
    worker's post-request hook runs after that."""
    time.sleep(seconds)
    return vm_kb(pid, "VmRSS:")


class Worker:
    """The one worker of a gunicorn master, followed across a restart."""

    def __init__(self, master: int):
        self.master = master
        self.pid = self._wait_for_one()

    def _wait_for_one(self) -> int:
        for _ in range(300):
            pids = worker_pids(self.master)
            if len(pids) == 1:
                return pids[0]
            time.sleep(0.1)
        raise RuntimeError("no single worker")

    def request(self, command: list[str]) -> dict:
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        started = time.perf_counter()
        status = subprocess.run(command, capture_output=True, text=True).stdout
        seconds = time.perf_counter() - started
        peak = vm_kb(self.pid, "VmHWM:")
        time.sleep(1.0)
        try:
            after, restarted = vm_kb(self.pid, "VmRSS:"), False
        except FileNotFoundError:  # the worker exited after the request (it had grown past its bound)
            after, restarted = None, True
        if restarted or self.pid not in worker_pids(self.master):
            time.sleep(3)
            self.pid, restarted = self._wait_for_one(), True
            after = vm_kb(self.pid, "VmRSS:")
        return {"status": status, "seconds": seconds, "peak": peak, "after": after, "restarted": restarted}


def curl(url: str, route: str, path: str, key: str, generator_id: str) -> list[str]:
    command = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-F", f"content=@{path}"]
    if route == "sign":
        command += ["-H", f"Authorization: Bearer {key}", "-F", "model=bench", "-F", f"generator_id={generator_id}"]
    target = {"verify": "/v1/verify", "sign": "/v1/sign", "byContent": "/v1/c2pa/matches/byContent"}[route]
    return [*command, f"{url}{target}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", nargs="*", default=DEFAULT_CASES, choices=list(cases()))
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()
    env = serve.prepared_database(args.database_url, VERIFY_RATE_PER_MINUTE="100000")
    [(org, _)] = serve.scale_organizations(env, "bench-served", 1)
    from tests import factories

    generator = factories.make_generator(org=org, formats=["image", "audio", "text", "video"])
    key = factories.make_api_key(org=org)
    every = cases()
    workdir = Path(tempfile.mkdtemp(prefix="served-memory-"))
    primer = workdir / "primer.webp"
    primer.write_bytes(every["webp-49MP"][1]())
    smalls = []
    for index, content in enumerate(small_files()):
        smalls.append(workdir / f"small-{index}")
        smalls[-1].write_bytes(content)
    print("| case | file MB | status | seconds | idle MB | fresh: peak MB | fresh: after MB "
          "| after a 49 MP WebP: peak MB | after MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.case:
        route, build = every[name]
        upload = workdir / name
        upload.write_bytes(build())
        size = upload.stat().st_size
        served: dict[str, int] = {}

        def on_start(process, port, served=served):
            served["master"] = process.pid

        def after(row: dict) -> str:
            return f"{row['after'] / 1024:.0f}" + (" (restarted)" if row["restarted"] else "")

        with contextlib.suppress(subprocess.TimeoutExpired), serve.gunicorn(env, workers=1, on_start=on_start) as url:
            worker = Worker(served["master"])
            for small in smalls * 2:  # every family's imports and first buffers: the worker's idle size
                subprocess.run(curl(url, "verify", str(small), key, str(generator.pk)), check=True, capture_output=True)
            idle = settled_rss_kb(worker.pid)
            command = curl(url, route, str(upload), key, str(generator.pk))
            fresh = worker.request(command)
            worker.request(curl(url, "verify", str(primer), key, str(generator.pk)))
            again = worker.request(command)
            print(f"| {name} | {size / MB:.1f} "
                  f"| {fresh['status']}/{again['status']} | {fresh['seconds']:.2f}/{again['seconds']:.2f} "
                  f"| {idle / 1024:.0f} | {fresh['peak'] / 1024:.0f} | {after(fresh)} "
                  f"| {again['peak'] / 1024:.0f} | {after(again)} |", flush=True)
        upload.unlink()


if __name__ == "__main__":
    main()
