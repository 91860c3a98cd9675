"""A long video signed as a job: how fast the request answers, and the progress a client sees while polling.

Makes a 1080p H.264 MP4 of `--seconds` (60 by default) with ffmpeg, starts a real Celery worker (`celery -A
config worker`, solo pool) on Redis (a folder broker without one) and a PostgreSQL database of its own,
then POSTs the video to /v1/sign with `Prefer: respond-async` through Django's test client in this process
(no network: the upload's parsing and storing are in the figure, its transfer is not) and polls
GET /v1/jobs/<id> every `--poll` seconds. Prints the answer's time (target: under 200 ms), each change of
status and progress with its time, how many distinct progress values a client saw and when progress first
passed 0, the job's total time, and the worker's CPU over the job.

    .venv/bin/python bench/jobs.py [--seconds 60] [--poll 0.5]
        [--database-url postgres://postgres@127.0.0.1:5432/bench_jobs] [--redis-url redis://127.0.0.1:6379/10]
"""

import argparse
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.dashboard_pages import set_up_django  # noqa: E402
from tests.waiting import cpu_seconds, process_tree  # noqa: E402


def make_video(path: Path, seconds: int) -> None:
    source = f"testsrc2=size=1920x1080:rate=30:duration={seconds}"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-c:v", "libx264",
                    "-preset", "veryfast", "-pix_fmt", "yuv420p", str(path)], check=True)


def redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        return False


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo",
                                   "-Q", env["JOBS_QUEUE"], "--without-gossip", "--without-mingle",
                                   "--without-heartbeat", "--loglevel=INFO"], cwd=ROOT, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    while "ready." not in log.read_text(errors="replace"):
        if worker.poll() is not None:
            raise SystemExit(f"the worker exited:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    return worker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--poll", type=float, default=0.5)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_jobs")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/10")
    args = parser.parse_args()
    if shutil.which("ffmpeg") is None:
        raise SystemExit("bench/jobs.py needs ffmpeg (apt-get install ffmpeg)")
    folder = Path(tempfile.mkdtemp(prefix="bench-jobs-"))
    try:
        run(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace, folder: Path) -> None:
    video = Path(tempfile.gettempdir()) / f"bench-jobs-{args.seconds}s-1080p.mp4"  # made once, kept for reruns
    started = time.perf_counter()
    if not video.exists():
        make_video(folder / "input.mp4", args.seconds)
        shutil.move(folder / "input.mp4", video)
    print(f"input: {args.seconds} s of 1920x1080 H.264 at 30 fps, {video.stat().st_size / 1e6:.1f} MB "
          f"(made or found in {time.perf_counter() - started:.1f} s: {video})")
    broker = args.redis_url if redis_answers(args.redis_url) else ""
    os.environ.update({"JOB_STORAGE_DIR": str(folder / "job-files"), "JOBS_QUEUE": f"bench-jobs-{uuid.uuid4().hex[:8]}",
                       "CELERY_BROKER_URL": broker, "LOG_FORMAT": "text"})
    set_up_django(args.database_url)
    worker = start_worker({**os.environ}, folder / "worker.log")
    try:
        measure(args, video, folder, worker)
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
        if broker:
            import redis

            client = redis.Redis.from_url(broker)
            leftovers = client.keys(f"*{os.environ['JOBS_QUEUE']}*")
            if leftovers:
                client.delete(*leftovers)


def measure(args: argparse.Namespace, video: Path, folder: Path, worker: subprocess.Popen) -> None:
    from django.conf import settings
    from rest_framework.test import APIClient

    from tests import factories

    settings.ALLOWED_HOSTS = ["*"]
    org = factories.make_org(plan="scale")
    generator = factories.make_generator(org=org, formats=["video"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")
    durations = _access_durations()
    warm = _sign_async(client, generator, _small_video(video, folder))
    _wait_finished(client, warm["Location"], worker, 0.2)  # first request's imports and connections
    data = video.read_bytes()
    encoding_cpu = _encoding_cpu(data)
    durations.clear()
    started, cpu_started = time.perf_counter(), time.process_time()
    response = _sign_async(client, generator, data)
    answered, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    print(f"POST /v1/sign with Prefer: respond-async answered {response.status_code} in {durations[-1]:.0f} ms "
          f"in the server (access log, wall), {(cpu - encoding_cpu) * 1000:.0f} ms of CPU (this process's, less "
          f"the test client's encoding of the {len(data) / 1e6:.1f} MB form, {encoding_cpu * 1000:.0f} ms); "
          f"{answered * 1000:.0f} ms wall with that encoding (broker: "
          f"{'Redis' if settings.CELERY_BROKER_URL.startswith('redis') else 'folder'})")
    job_url = response["Location"]
    worker_cpu_before = sum(cpu_seconds(pid) or 0 for pid in process_tree(worker.pid))
    body, seen = _wait_finished(client, job_url, worker, args.poll, started=started, show=True)
    worker_cpu = sum(cpu_seconds(pid) or 0 for pid in process_tree(worker.pid)) - worker_cpu_before
    item = body["items"][0]
    print(f"job {body['status']} after {seen[-1][0]:.1f} s; the worker spent {worker_cpu:.1f} s of CPU; "
          f"item: {item['status']} {item['error'] or ''}")
    print(progress_summary(seen))
    durations.clear()
    cpu_started = time.process_time()
    signed = client.post("/v1/sign", {"content": io.BytesIO(data), "model": "bench", "generator_id": str(generator.pk)},
                         format="multipart")
    cpu = time.process_time() - cpu_started - encoding_cpu
    print(f"the same file without Prefer: {signed.status_code} in {durations[-1]:.0f} ms (access log, wall), "
          f"{cpu * 1000:.0f} ms of CPU")


def progress_summary(seen: list) -> str:
    """The progress values a polling client saw: how many distinct, whether they only grew, the first above 0."""
    values = [progress for _, _, progress in seen]
    moving = [(at, progress) for at, status, progress in seen if status == "running" and 0 < progress < 1]
    first = next(((at, progress) for at, _, progress in seen if progress > 0), None)
    first_text = f"{first[1]} at {first[0]:.1f} s" if first else "never"
    return (f"progress: {len(set(values))} distinct values ({len(moving)} strictly between 0 and 1 while running), "
            f"{'never decreasing' if values == sorted(values) else 'DECREASED'}; first above 0: {first_text}")


def _sign_async(client, generator, data: bytes):
    body = {"content": io.BytesIO(data), "model": "bench", "generator_id": str(generator.pk)}
    response = client.post("/v1/sign", body, format="multipart", HTTP_PREFER="respond-async")
    assert response.status_code == 202, response.content
    return response


def _encoding_cpu(data: bytes) -> float:
    """CPU seconds the test client spends building the multipart body (not the server's work)."""
    from django.test.client import BOUNDARY, encode_multipart

    started = time.process_time()
    encode_multipart(BOUNDARY, {"content": io.BytesIO(data), "model": "bench", "generator_id": "x"})
    return time.process_time() - started


def _small_video(video: Path, folder: Path) -> bytes:
    small = folder / "warm-up.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(video), "-t", "1", "-c", "copy", str(small)], check=True)
    return small.read_bytes()


def _wait_finished(client, job_url: str, worker: subprocess.Popen, poll: float, *, started: float | None = None,
                   show: bool = False) -> tuple[dict, list]:
    """Poll the job until it ends; the (seconds, status, progress) changes seen."""
    started = time.perf_counter() if started is None else started
    seen: list = []
    while True:
        body = client.get(job_url).json()
        state = (body["status"], body["progress"])
        if not seen or seen[-1][1:] != state:
            seen.append((time.perf_counter() - started, *state))
            if show:
                print(f"  {seen[-1][0]:7.1f} s  {body['status']:9}  progress {body['progress']}")
        if body["status"] in ("succeeded", "failed"):
            return body, seen
        if worker.poll() is not None:
            raise SystemExit("the worker exited")
        time.sleep(poll)


def _access_durations() -> list[float]:
    """The server-side durations (ms) of the POSTs from now on, as the access log line reports them."""
    import logging

    durations: list[float] = []

    class Keep(logging.Handler):
        def emit(self, record):
            if getattr(record, "method", "") == "POST":
                durations.append(record.duration_ms)

    access = logging.getLogger("access")
    access.addHandler(Keep())
    access.setLevel(logging.INFO)
    access.propagate = False  # kept here, not printed
    return durations


if __name__ == "__main__":
    main()
