"""deploy/nginx.conf run by a real nginx: POST /v1/verify goes to the verification pool (deploy/serve.sh's
VERIFY_BIND), every other route to the app's workers, and without a verification pool the app's workers
answer it. Skipped where nginx is not installed."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.nginx_site import NGINX, loopback_site, start_nginx
from tests.proc_sockets import free_port

RECORD = "0b8e1c4e-6a3c-4f5e-9a53-2f6f1c9d2b7a"


def _pool(name: str) -> ThreadingHTTPServer:
    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as gunicorn's gthread workers

        def _answer(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"pool": name, "path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def pools(tmp_path):
    if NGINX is None:
        pytest.skip("nginx is not installed")
    app, verify = _pool("app"), _pool("verify")
    port = free_port()
    site = loopback_site(port=port, app_port=app.server_port, verify_port=verify.server_port)
    nginx = start_nginx(tmp_path, site, port)
    yield port, verify
    nginx.terminate()
    nginx.wait(timeout=10)
    app.shutdown()
    verify.shutdown()


def _send(port: int, method: str, path: str) -> tuple[int, dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n"
                     "Content-Type: application/json\r\nConnection: close\r\n\r\n{}".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(payload)


def test_single_verification_goes_to_its_own_pool(pools):
    port, _ = pools
    assert _send(port, "POST", "/v1/verify") == (200, {"pool": "verify", "path": "/v1/verify"})


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/v1/sign"), ("POST", "/v1/records"), ("GET", f"/v1/records/{RECORD}"), ("POST", "/v1/verify/batch"),
    ("POST", "/v1/c2pa/matches/byContent"), ("POST", "/verify"), ("GET", "/v1/verify/"),
])
def test_every_other_route_goes_to_the_app_workers(pools, method, path):
    port, _ = pools
    assert _send(port, method, path) == (200, {"pool": "app", "path": path})


def test_without_a_verification_pool_the_app_workers_verify(pools):
    port, verify = pools
    verify.shutdown()
    verify.server_close()  # the port refuses connections, as when serve.sh starts no verification pool
    for _ in range(3):
        assert _send(port, "POST", "/v1/verify") == (200, {"pool": "app", "path": "/v1/verify"})
