"""The README's curl session runs as written, so the README cannot drift from the service.

Its ```sh blocks run in order, in one working folder (with the checkout's `.venv` and `client/` beside,
as at the top of a checkout), against a live server started the way `make run` starts it: `migrate`,
then deploy/run_dev.py (runserver, the log sequencer, the signer and a job worker) on its own SQLite file and
a free port.
The only change to a block is that port. The variables a block sets carry over to the next, as in one shell.
Each block must exit 0 under `set -e -o pipefail` and print what its `# =>` lines say.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.readme_blocks import assigned_names, blocks_of, unmet
from tests.log_scan import watch_file
from tests.proc_sockets import free_port
from tests.waiting import process_tree, serving, wait_until

PROJECT = Path(__file__).resolve().parents[2]
README = PROJECT / "README.md"
DOCUMENTED_ADDRESS = "127.0.0.1:8000"
STARTUP_CPU_SECONDS = 120  # CPU seconds to start serving (tests/waiting.py)
BLOCK_SECONDS = 180
MOST_SKIPPED = 6  # blocks shown but not run must stay few


@pytest.fixture
def readme_server(tmp_path):
    """The address (host:port) of the service as `make run` serves it, on a new SQLite database."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE", "PUBLIC_BASE_URL")}
    env.update(DEBUG="true", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               JOB_STORAGE_DIR=str(tmp_path / "job-files"))
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=PROJECT, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert migrate.returncode == 0, migrate.stderr[-4000:]
    address = f"127.0.0.1:{free_port()}"
    env["PUBLIC_BASE_URL"] = f"http://{address}"
    log_path = tmp_path / "server.log"
    watch_file(log_path)  # its lines join the session's secret scan
    log = log_path.open("w")
    server = subprocess.Popen([sys.executable, "deploy/run_dev.py", address], cwd=PROJECT, env=env,
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: serving(f"http://{address}/healthz"), pids=lambda: process_tree(server.pid),
                   cpu_budget=STARTUP_CPU_SECONDS, what=f"the README's server answering on {address}",
                   alive=lambda: server.poll() is None, details=lambda: log_path.read_text()[-4000:])
        yield address, log_path
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _run_block(text: str, *, folder: Path, names: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """One block in bash, after the variables and functions the blocks before it left; saves them again."""
    state = folder / ".readme-state.sh"
    script = (f"[ -f {state} ] && source {state}\nset -e -o pipefail\n{text}\n"
              f"{{ declare -p {' '.join(names)} 2>/dev/null || true; declare -f; }} > {state}\n")
    return subprocess.run(["bash", "-c", script], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=BLOCK_SECONDS)


def test_the_readme_marks_few_blocks_as_not_run_and_says_why():
    blocks = blocks_of(README.read_text())
    skipped = [block for block in blocks if block.skip_reason]
    assert len(blocks) - len(skipped) >= 3
    assert len(skipped) <= MOST_SKIPPED, [block.line for block in skipped]
    assert all(block.skip_reason.strip() for block in skipped)


def test_the_readmes_shell_blocks_run_in_order_against_a_live_server(readme_server, tmp_path):
    address, log_path = readme_server
    folder = tmp_path / "checkout"
    folder.mkdir()
    (folder / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (folder / "client").symlink_to(PROJECT / "client")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8"}
    (tmp_path / "home").mkdir()
    blocks = blocks_of(README.read_text())
    names = assigned_names(blocks)
    ran = 0
    for block in blocks:
        if block.skip_reason:
            continue
        result = _run_block(block.text.replace(DOCUMENTED_ADDRESS, address), folder=folder, names=names, env=env)
        where = f"README.md line {block.line}:\n{block.text}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        assert result.returncode == 0, f"exit {result.returncode}, {where}\nserver:\n{log_path.read_text()[-3000:]}"
        for expectation in block.expectations:
            assert unmet(expectation, result.stdout) == [], f"# => {expectation}\n{where}"
        ran += 1
    assert ran >= 3
