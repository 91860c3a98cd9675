"""webhooks.transport against raw sockets that misbehave: the deadline holds whatever the peer does."""

import socket
import struct
import threading
import time

import pytest

from webhooks.targets import Target
from webhooks.transport import post


class RawServer:
    """Accepts connections on 127.0.0.1 and runs `script(conn)` for each; records what arrived."""

    def __init__(self, script):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.received: list[bytes] = []
        self.connections = 0
        self._script = script
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def target(self, scheme="http", path="/in?x=1") -> Target:
        return Target(url=f"{scheme}://hooks.test:{self.port}{path}", scheme=scheme, host="hooks.test",
                      port=self.port, addresses=("127.0.0.1",))

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn):
        with conn:
            conn.settimeout(5)
            try:
                self.received.append(conn.recv(65536))
                self._script(conn, self._stop)
            except OSError:
                pass

    def close(self):
        self._stop.set()
        self.sock.close()


@pytest.fixture
def serve():
    servers = []

    def start(script):
        server = RawServer(script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def _send(server, *, deadline_in=30.0, scheme="http", headers=None):  # 30 s: ample on a busy machine
    return post(server.target(scheme), body=b'{"a":1}', headers=headers or {"X-Service-Signature": "t=1,v1=ab"},
                deadline=time.monotonic() + deadline_in)


def test_the_request_line_headers_and_body(serve):
    server = serve(lambda conn, stop: conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n"))
    outcome = _send(server)
    assert (outcome.status_code, outcome.ok, outcome.error) == (204, True, "")
    head, body = server.received[0].split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /in?x=1 HTTP/1.1"
    assert f"Host: hooks.test:{server.port}" in lines and "Connection: close" in lines
    assert "Content-Type: application/json" in lines and "Content-Length: 7" in lines
    assert "X-Service-Signature: t=1,v1=ab" in lines and body == b'{"a":1}'


def test_a_peer_that_drips_its_answer_cannot_stretch_the_deadline(serve):
    def drip(conn, stop):
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100:
            if stop.wait(0.2):
                return
            conn.sendall(bytes([byte]))

    server = serve(drip)
    outcome = _send(server, deadline_in=1.0)
    # The whole head takes 23 s to drip, each byte well within any per-read timeout: "timed out" is the
    # deadline's doing (a busy machine may make the call longer; what ended it is the point).
    assert (outcome.status_code, outcome.error, outcome.attempted) == (None, "timed out", True)


def test_a_silent_peer_times_out(serve):
    server = serve(lambda conn, stop: stop.wait(600))  # silent until the test ends
    assert _send(server, deadline_in=0.5).error == "timed out"  # the deadline ended it, however late


def test_informational_answers_are_skipped(serve):
    server = serve(lambda conn, stop: conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: x\r\n\r\n"
                                                   b"HTTP/1.1 201 Created\r\n\r\n"))
    assert _send(server).status_code == 201


@pytest.mark.parametrize("answer", [b"garbage\r\n\r\n", b"HTTP/1.1 2000 OK\r\n\r\n", b"", b"SSH-2.0-OpenSSH\r\n"])
def test_what_is_not_an_http_answer_is_a_failure(serve, answer):
    server = serve(lambda conn, stop: conn.sendall(answer))
    outcome = _send(server)
    assert outcome.status_code is None and outcome.error.startswith("connection failed")


def test_an_endless_head_is_cut_off(serve):
    server = serve(lambda conn, stop: conn.sendall(b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * 40_000))
    outcome = _send(server)
    assert outcome.status_code is None and "too long" in outcome.error


def test_a_status_line_before_the_connection_closes_counts(serve):
    server = serve(lambda conn, stop: conn.sendall(b"HTTP/1.0 200 OK\r\n"))
    assert _send(server).status_code == 200


def test_nothing_is_sent_once_the_deadline_passed(serve):
    server = serve(lambda conn, stop: conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n"))
    outcome = _send(server, deadline_in=-0.1)
    assert (outcome.attempted, outcome.status_code) == (False, None)
    time.sleep(0.1)
    assert server.connections == 0


def test_a_header_with_a_line_break_is_refused_before_connecting(serve):
    server = serve(lambda conn, stop: conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n"))
    outcome = _send(server, headers={"X-Service-Signature": "t=1\r\nX-Injected: 1"})
    assert outcome.status_code is None and "line break" in outcome.error
    time.sleep(0.1)
    assert server.connections == 0


def test_https_to_a_peer_that_does_not_speak_tls_is_a_tls_failure(serve):
    server = serve(lambda conn, stop: conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n"))
    outcome = _send(server, scheme="https")
    assert outcome.status_code is None and outcome.error.startswith(("TLS error", "connection failed"))


def test_the_next_checked_address_is_tried_when_one_refuses(serve):
    server = serve(lambda conn, stop: conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n"))
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead_port_target = Target(url=f"http://h:{server.port}/", scheme="http", host="h", port=server.port,
                              addresses=("127.0.0.2", "127.0.0.1"))  # nothing listens on 127.0.0.2
    closed.close()
    assert post(dead_port_target, body=b"{}", headers={}, deadline=time.monotonic() + 30).status_code == 200


def _reset(conn, stop):
    # SO_LINGER 0: close() sends RST instead of FIN (a crashed receiver, a firewall rejecting mid-stream).
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_a_peer_that_resets_the_connection_is_a_prompt_failure(serve):
    server = serve(_reset)
    outcome = _send(server, deadline_in=60.0)
    # Prompt: the reset ended it, not the deadline (that would read "timed out"), however busy the machine.
    assert outcome.status_code is None and outcome.attempted and outcome.error.startswith("connection failed")


def test_a_peer_that_resets_before_reading_is_a_prompt_failure(serve):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def accept_and_reset():
        conn, _ = listener.accept()
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    threading.Thread(target=accept_and_reset, daemon=True).start()
    port = listener.getsockname()[1]
    target = Target(url=f"http://hooks.test:{port}/in", scheme="http", host="hooks.test", port=port,
                    addresses=("127.0.0.1",))
    outcome = post(target, body=b"{}", headers={}, deadline=time.monotonic() + 60.0)
    listener.close()
    # Prompt: the reset ended it, not the deadline, however busy the machine.
    assert outcome.status_code is None and outcome.error and outcome.error != "timed out"
