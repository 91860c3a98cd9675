"""`make run` runs what production runs: the development server, the transparency log's sequencer and the
signer service (a server-managed signature comes from it).

The test starts `make run` itself, as a newcomer types it (on its own SQLite file and a free port, in a
session of its own as a terminal would), signs a record through the API, watches the sequencer take it
into the log (the log's routes, `svc log pin`, `svc log verify`), then presses Ctrl-C: SIGINT to the
foreground process group, as the terminal sends it. Every process `make run` started must be gone.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from svc_client import Client, SigningKey, record_sign
from svc_client.cli import main as svc
from tests.log_scan import watch_file
from tests.media import photo_bytes
from tests.proc_sockets import free_port
from tests.waiting import process_tree, serving, wait_until

PROJECT = Path(__file__).resolve().parents[2]
# CPU seconds the processes of `make run` may spend before each state is reached (tests/waiting.py).
STARTUP_CPU_SECONDS = 120  # migrating a new database and starting both processes: about 10 here
SEQUENCED_CPU_SECONDS = 30  # sequencer rounds: milliseconds each
STOP_CPU_SECONDS = 30

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


def _session_pids(sid: int) -> list[str]:
    """The command lines of every live process in session `sid` (zombies are already dead)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(f"{entry}: {cmdline}")
    return found


@pytest.fixture
def make_run(tmp_path):
    """(base URL, output file, the make process) of `make run` on its own database and port."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE", "DEBUG", "PUBLIC_BASE_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    env["JOB_STORAGE_DIR"] = str(tmp_path / "job-files")  # and the development broker's folder
    port = free_port()
    output_path = tmp_path / "make-run.log"
    watch_file(output_path)  # its lines join the session's secret scan
    output = output_path.open("w")
    # -o: the install step is what `make install` did for this very interpreter; never reinstall here.
    make = subprocess.Popen(["make", "-o", ".venv/.installed", "run", f"PORT={port}",
                             f"BIN={Path(sys.executable).parent}"],
                            cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=output,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: serving(f"{base}/healthz"), pids=lambda: process_tree(make.pid),
                   cpu_budget=STARTUP_CPU_SECONDS, what=f"make run answering on {base}",
                   alive=lambda: make.poll() is None, details=lambda: output_path.read_text()[-4000:])
        yield base, output_path, make
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
        output.close()


def _sequenced(condition, make, output_path, what: str):
    """What `condition` returns once the log has the record, bounded by the CPU make run's processes spend."""
    return wait_until(condition, pids=lambda: process_tree(make.pid), cpu_budget=SEQUENCED_CPU_SECONDS, what=what,
                      alive=lambda: make.poll() is None, details=lambda: output_path.read_text()[-4000:])


def _newcomer_key(base: str) -> str:
    """An organization API key, by the routes a newcomer uses (register, log in, create a key)."""
    credentials = {"email": "newcomer@example.com", "password": "a-long-password"}
    registered = requests.post(f"{base}/v1/auth/register", json={"org_name": "Newcomer", **credentials}, timeout=30)
    assert registered.status_code == 201, registered.text
    login = requests.post(f"{base}/v1/auth/login", json=credentials, timeout=30)
    assert login.status_code == 200, login.text
    created = requests.post(f"{base}/v1/api-keys", json={"name": "dev"}, timeout=30,
                            headers={"Authorization": f"Bearer {login.json()['token']}"})
    assert created.status_code == 201, created.text
    return created.json()["key"]


def test_make_run_sequences_new_records_into_the_log_and_ctrl_c_stops_every_process(make_run, tmp_path):
    base, output_path, make = make_run
    api_key = _newcomer_key(base)
    client = Client(base, api_key=api_key)
    key = SigningKey.generate()
    generator = client.generator_register(name="local", public_key=key.public_key_b64, kid=key.kid)
    created = client.record_submit(record_sign(key=key, generator_id=generator["generator_id"], model="m-1",
                                               data=photo_bytes(fmt="png")))

    def inclusion():
        found = requests.get(f"{base}/v1/log/inclusion", params={"record_id": created.record_id}, timeout=30).json()
        return found if found["status"] == "integrated" else None

    inclusion = _sequenced(inclusion, make, output_path, "the first record sequenced")
    assert inclusion["index"] == 0 and inclusion["tree_size"] >= 1
    checkpoint = requests.get(f"{base}/v1/log/checkpoint", timeout=30)
    assert checkpoint.status_code == 200 and checkpoint.text.splitlines()[1] == str(inclusion["tree_size"])
    # A server-managed signature comes from the signer service beside the server, over its socket (and the
    # checkpoints above were signed there too).
    hosted = client.generator_register(name="hosted")
    assert client.sign(photo_bytes(fmt="png"), generator_id=hosted["generator_id"], model="m-2").record_id
    # `Prefer: respond-async`: the job worker beside the server signs it (through the filesystem broker: no Redis).
    bearer = {"Authorization": f"Bearer {api_key}"}
    accepted = requests.post(f"{base}/v1/sign", headers={**bearer, "Prefer": "respond-async"},
                             data={"model": "m-3", "generator_id": hosted["generator_id"]},
                             files={"content": photo_bytes(fmt="png")}, timeout=30)
    assert accepted.status_code == 202, accepted.text

    def job_done():
        job = requests.get(f"{base}{accepted.headers['Location']}", headers=bearer, timeout=30).json()
        return job if job["status"] in ("succeeded", "failed") else None

    assert _sequenced(job_done, make, output_path, "a job done by the worker")["status"] == "succeeded"
    assert requests.get(f"{base}/v1/records/{created.record_id}", timeout=30).json()["log"]["status"] == "integrated"

    # The sequencer dies (a crash, an OOM kill): run_dev reports it and starts another, as a supervisor would.
    [sequencer] = [int(line.split(":")[0]) for line in _session_pids(make.pid) if "log_sequencer" in line]
    os.kill(sequencer, signal.SIGKILL)
    second = client.record_submit(record_sign(key=key, generator_id=generator["generator_id"], model="m-1",
                                              data=photo_bytes(fmt="jpeg")))
    _sequenced(lambda: requests.get(f"{base}/v1/records/{second.record_id}", timeout=30).json()["log"]["status"]
               == "integrated", make, output_path, "a record sequenced after the sequencer's restart")
    assert "the log sequencer exited (-9); starting it again" in output_path.read_text()

    log_keys = tmp_path / "log-keys.json"
    assert svc(["--url", base, "log", "pin", "-o", str(log_keys)]) == 0
    for record_id in (created.record_id, second.record_id):
        assert svc(["--url", base, "log", "verify", record_id, "--log-keys", str(log_keys)]) == 0

    assert _session_pids(make.pid), "the processes of make run are not where this test looks for them"
    os.killpg(make.pid, signal.SIGINT)  # Ctrl-C in the terminal
    wait_until(lambda: make.poll() is not None and not _session_pids(make.pid),
               pids=lambda: [int(line.split(":")[0]) for line in _session_pids(make.pid)],
               cpu_budget=STOP_CPU_SECONDS, what="every process of make run ended after Ctrl-C",
               details=lambda: f"{_session_pids(make.pid)}\n{output_path.read_text()[-4000:]}")
    output = output_path.read_text()
    assert "Starting development server" in output  # both wrote to the terminal
    assert "Log sequencer: a round every" in output and "log: 1 records integrated" in output
    assert "signer listening on" in output and "signed record for generator" in output
    assert "jobs.tasks.job_run" in output and "succeeded in" in output  # the worker wrote here too
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{base}/healthz", timeout=5)


def test_make_run_stops_the_sequencer_when_the_server_exits(tmp_path):
    """A port already taken: runserver exits at once, and the sequencer beside it must not outlive it."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE", "DEBUG", "PUBLIC_BASE_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        output_path = tmp_path / "make-run.log"
        with output_path.open("w") as output_file:
            make = subprocess.Popen(["make", "-o", ".venv/.installed", "run", f"PORT={port}",
                                     f"BIN={Path(sys.executable).parent}"],
                                    cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=output_file,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                wait_until(lambda: make.poll() is not None, pids=lambda: process_tree(make.pid),
                           cpu_budget=STARTUP_CPU_SECONDS, what="make run ending on a taken port",
                           details=lambda: output_path.read_text()[-4000:])
            finally:
                if make.poll() is None:
                    os.killpg(make.pid, signal.SIGKILL)
                    make.wait()
    output = output_path.read_text()
    assert make.returncode != 0
    assert "runserver exited" in output and "stopping the log sequencer" in output, output[-4000:]
    assert _session_pids(make.pid) == []
