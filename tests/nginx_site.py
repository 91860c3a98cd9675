"""deploy/nginx.conf made runnable on loopback without a certificate, and a real nginx serving it.

Used by the proxy tests and by bench/load.py, so both run the deployment's own locations and upstreams:
only the listen address, the TLS lines and the upstream ports change.
"""

import re
import shutil
import socket
import subprocess
from pathlib import Path

from tests.waiting import process_tree, wait_until

PROJECT = Path(__file__).resolve().parent.parent
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)


def loopback_site(*, port: int, app_port: int, verify_port: int) -> str:
    """deploy/nginx.conf listening on 127.0.0.1:`port` over plain HTTP, its upstreams at the given ports."""
    site = (PROJECT / "deploy" / "nginx.conf").read_text()
    site = re.sub(r"server \{[^{}]*return 301[^{}]*\}\n", "", site, count=1)  # the port-80 redirect
    site = site.replace("listen 443 ssl http2;", f"listen 127.0.0.1:{port};")
    site = "\n".join(line for line in site.splitlines()
                     if "[::]" not in line and not line.strip().startswith("ssl_"))
    site = site.replace("server 127.0.0.1:8001;", f"server 127.0.0.1:{verify_port};")
    return site.replace("server 127.0.0.1:8000", f"server 127.0.0.1:{app_port}")


def cluster_site(*, port: int, app_ports: list[int]) -> str:
    """deploy/nginx.conf on 127.0.0.1:`port` in front of several app instances: both upstreams list every
    instance (no verification pool of its own), with the deployment's keepalive and failover settings."""
    site = loopback_site(port=port, app_port=app_ports[0], verify_port=app_ports[0])
    servers = "".join(f"    server 127.0.0.1:{app_port};\n" for app_port in app_ports)

    def upstream(match: re.Match) -> str:
        kept = "".join(line + "\n" for line in match.group(2).splitlines() if line.strip()
                       and not line.strip().startswith("server "))
        return f"{match.group(1)}{servers}{kept}}}"

    return re.sub(r"(upstream \w+ \{\n)([^{}]*)\}", upstream, site)


def start_nginx(folder: Path, site: str, port: int, *, workers: int = 1) -> subprocess.Popen:
    """A foreground nginx in `folder` serving `site`; returns once `port` accepts connections."""
    (folder / "site.conf").write_text(site)
    (folder / "nginx.conf").write_text(
        f"daemon off; worker_processes {workers}; pid {folder}/nginx.pid; error_log {folder}/error.log;\n"
        "events { worker_connections 1024; }\n"
        f"http {{ access_log off; include {folder}/site.conf; }}\n")
    process = subprocess.Popen([NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = folder / "error.log"

    def accepting() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            return False
        return True

    wait_until(accepting, pids=lambda: process_tree(process.pid), cpu_budget=10, what="nginx listening",
               alive=lambda: process.poll() is None, details=lambda: log.read_text() if log.exists() else "")
    return process
