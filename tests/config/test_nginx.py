"""The proxy in front of the app (deploy/nginx.compose.conf, the same limits as deploy/nginx.conf) run by a real
nginx: every route that takes an upload lets the app's limit through, and everything else stops at 1 MB with the
API's error envelope. Skipped where nginx is not installed (`apt-get install nginx-light`)."""

import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.nginx_site import NGINX, start_nginx
from tests.proc_sockets import free_port

PROJECT = Path(__file__).resolve().parents[2]
RECORD = "0b8e1c4e-6a3c-4f5e-9a53-2f6f1c9d2b7a"
# Every route whose app limit is over nginx's 1 MB default, with that limit (core/uploads.py, the views).
UPLOAD_ROUTES = ["/v1/sign", "/v1/verify", f"/v1/records/{RECORD}/c2pa/embed", "/v1/c2pa/matches/byContent",
                 "/dashboard/sign", "/verify", "/v1/verify/batch", "/v1/records/batch", "/v1/sign/batch"]
LIMITS_MB = {"/v1/verify/batch": 36, "/v1/records/batch": 10, "/v1/sign/batch": 259}


def _locations(name: str) -> list[tuple[str, str]]:
    text = (PROJECT / "deploy" / name).read_text()
    return re.findall(r'location ((?:"[^"]*"|[^{"])+?) \{\s*client_max_body_size (\w+);', text)


def test_both_proxy_configs_give_the_same_routes_the_same_limits():
    assert _locations("nginx.compose.conf") == _locations("nginx.conf")
    assert len(_locations("nginx.conf")) == len(UPLOAD_ROUTES)


class _Upstream(BaseHTTPRequestHandler):
    def do_POST(self):
        received = len(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        body = json.dumps({"received": received, "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    if NGINX is None:
        pytest.skip("nginx is not installed")
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    prefix = tmp_path_factory.mktemp("nginx")
    port = free_port()
    site = (PROJECT / "deploy" / "nginx.compose.conf").read_text()
    site = site.replace("server web:8000;", f"server 127.0.0.1:{upstream.server_port};")
    site = site.replace("server web2:8000;", "")  # the second app instance: one upstream serves here
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};").replace("listen [::]:80;", "")
    process = start_nginx(prefix, site, port)
    yield port
    process.terminate()
    process.wait(timeout=10)
    upstream.shutdown()


def _post(port: int, path: str, *, declared: int, body: bytes = b"") -> tuple[int, bytes]:
    """POST with a declared Content-Length (nginx refuses an over-limit one before reading the body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {declared}\r\n"
                     "Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n".encode() + body)
        answer = b""
        try:
            # Read the answer by its Content-Length, not to the close: after refusing a declared body nginx
            # lingers (lingering_timeout, 5 s) for a body that never comes before it closes.
            while not _complete(answer) and (chunk := sock.recv(65536)):
                answer += chunk
        except ConnectionResetError:  # nginx resets a connection whose declared body it refused, after answering
            pass
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


def _complete(answer: bytes) -> bool:
    head, separator, payload = answer.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return bool(separator and length and len(payload) >= int(length.group(1)))


@pytest.mark.parametrize("path", UPLOAD_ROUTES)
def test_an_upload_route_passes_a_body_over_1_mb_to_the_app(proxy, path):
    body = b"\0" * (2 * 1024 * 1024)
    status, payload = _post(proxy, path, declared=len(body), body=body)
    assert status == 200
    assert json.loads(payload) == {"received": len(body), "path": path}


@pytest.mark.parametrize("path", UPLOAD_ROUTES)
def test_an_upload_route_refuses_more_than_the_app_allows_with_the_envelope(proxy, path):
    limit_mb = LIMITS_MB.get(path, 50)
    status, payload = _post(proxy, path, declared=(limit_mb + 2) * 1024 * 1024)
    assert status == 413
    assert json.loads(payload)["error"] == "payload_too_large"


@pytest.mark.parametrize("path", ["/v1/records", "/v1/auth/login", f"/v1/records/{RECORD}/c2pa",
                                  "/dashboard/sign/x", "/v1/sign/"])
def test_every_other_route_stops_at_1_mb(proxy, path):
    status, payload = _post(proxy, path, declared=2 * 1024 * 1024)
    assert status == 413
    assert json.loads(payload)["error"] == "payload_too_large"


class _Dying(BaseHTTPRequestHandler):
    """An app instance that dies mid-request: reads the request whole, then drops the connection unanswered."""

    received: list[str] = []

    def do_GET(self):
        self._die()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._die()

    def _die(self):
        _Dying.received.append(self.command)
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args):
        pass


class _Counting(_Upstream):
    received: list[str] = []

    def do_GET(self):
        _Counting.received.append("GET")
        self._answer()

    def do_POST(self):
        _Counting.received.append("POST")
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer()

    def _answer(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")


def _request(port: int, method: str) -> tuple[int, dict, bytes]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, "/v1/records", body=b"{}" if method == "POST" else None)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


@pytest.fixture
def failing_cluster(tmp_path):
    """deploy/nginx.conf in front of two instances: one dies on every request, one answers; `dead` is a port
    nothing listens on."""
    from tests.nginx_site import cluster_site

    if NGINX is None:
        pytest.skip("nginx is not installed")
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler) for handler in (_Dying, _Counting)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    _Dying.received, _Counting.received = [], []

    def start(app_ports: list[int], name: str) -> int:
        port = free_port()
        (tmp_path / name).mkdir()
        processes.append(start_nginx(tmp_path / name, cluster_site(port=port, app_ports=app_ports), port))
        return port

    processes = []
    yield start, [server.server_port for server in servers]
    for process in processes:
        process.terminate()
        process.wait(timeout=10)
    for server in servers:
        server.shutdown()


def test_no_instance_answering_is_a_503_envelope_with_retry_after(failing_cluster):
    start, _ = failing_cluster
    port = start([free_port(), free_port()], "down")  # nothing listens on either
    for method in ("GET", "POST"):
        status, headers, body = _request(port, method)
        assert (status, headers.get("Retry-After")) == (503, "1")
        assert json.loads(body)["error"] == "service_unavailable"


def test_a_get_is_retried_on_the_other_instance_and_a_post_is_never_sent_twice(failing_cluster):
    start, (dying, answering) = failing_cluster
    # Each on a fresh nginx: after one failure nginx leaves the dying instance out for fail_timeout (10 s).
    # Round robin from the first server: the first request of each goes to the dying instance.
    gets = [_request(start([dying, answering], "gets"), "GET")[0]]
    assert gets == [200] and _Dying.received == ["GET"]  # passed on to the other instance
    posts_port = start([dying, answering], "posts")
    posts = [_request(posts_port, "POST")[0] for _ in range(4)]
    # The POST the dying instance received is answered 503 (its client may retry it with its Idempotency-Key),
    # not passed on; the next ones go to the other instance: each POST reached exactly one instance.
    assert posts == [503, 200, 200, 200]
    assert _Dying.received.count("POST") == 1 and _Counting.received.count("POST") == 3
