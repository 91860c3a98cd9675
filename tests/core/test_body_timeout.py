"""core/body_timeout.py without a server: gunicorn's own body reader over a socket pair, and fake streams.

The attack against a real gunicorn is in test_slow_clients.py.
"""

import io
import json
import logging
import socket
import threading
import time

import pytest
from django.test.client import ClientHandler
from gunicorn.http.body import Body, LengthReader
from gunicorn.http.unreader import SocketUnreader

from core import body_timeout
from core.body_timeout import BodyReadTimeout, BodyTimeoutMiddleware, TimedInput

LENGTH = 100_000


@pytest.fixture
def client_and_server():
    client, server = socket.socketpair()
    yield client, server
    client.close()
    server.close()


def gunicorn_body(server: socket.socket, length: int = LENGTH) -> Body:
    """What gunicorn puts in wsgi.input for a request with Content-Length."""
    return Body(LengthReader(SocketUnreader(server), length))


def test_a_stalled_body_raises_request_timeout_after_the_read_timeout(client_and_server):
    client, server = client_and_server
    client.sendall(b'{"email":')
    body = gunicorn_body(server)
    timed = TimedInput(body, length=LENGTH, sock=server, read_timeout=0.3, deadline=0)

    # Were the timeout missing, the read would wait for ever: the client then hangs up, and the read ends
    # some other way than BodyReadTimeout (a guard, not a bound: a busy machine only delays the timeout).
    guard = threading.Timer(120, client.shutdown, [socket.SHUT_RDWR])
    guard.start()
    started = time.monotonic()
    try:
        with pytest.raises(BodyReadTimeout, match="stalled"):  # the read timeout, not the (disabled) deadline
            timed.read(LENGTH)
    finally:
        guard.cancel()

    assert time.monotonic() - started >= 0.3  # not before the timeout (only a lower bound: load lengthens it)
    assert timed.timed_out
    assert body.failed  # gunicorn's gthread worker then closes the connection instead of reusing it
    assert server.gettimeout() is None  # restored: gunicorn writes the 408 without our timeout
    with pytest.raises(BodyReadTimeout):
        timed.read(LENGTH)  # and nothing reads the socket again without a timeout


def test_a_trickling_body_misses_its_deadline(client_and_server):
    # One byte every 50 ms never trips the 30 s read timeout (however busy the machine), and gunicorn's
    # Body.read() keeps calling recv() until it has 1 KiB: only the deadline watchdog can stop it.
    client, server = client_and_server
    stop = threading.Event()
    sent = []

    def trickle():
        for _ in range(2400):  # 2 minutes at most: a guard, should the deadline never come
            if stop.wait(0.05):
                return
            try:
                client.send(b" ")
            except OSError:
                return
            sent.append(1)
        client.shutdown(socket.SHUT_RDWR)  # then the read ends some other way than BodyReadTimeout

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    timed = TimedInput(gunicorn_body(server), length=LENGTH, sock=server, read_timeout=30, deadline=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(BodyReadTimeout, match="did not arrive in time"):  # the deadline, not the read timeout
            while timed.read(4096):
                pass
    finally:
        stop.set()
        sender.join(timeout=5)
    assert time.monotonic() - started >= 0.5  # not before the deadline (only a lower bound: load lengthens it)
    assert 0 < len(sent) < LENGTH  # bytes kept coming, and the body was still far from whole


def test_a_body_that_arrives_in_time_is_read_whole(client_and_server):
    client, server = client_and_server
    client.sendall(b"x" * 1000)
    timed = TimedInput(gunicorn_body(server, 1000), length=1000, sock=server, read_timeout=1, deadline=5)

    assert timed.read(600) + timed.read(600) == b"x" * 1000
    assert not timed.timed_out
    assert server.gettimeout() is None
    assert timed._watch.sock is None  # the watchdog forgot it: it can never shut this connection


class ClockedStream:
    """A slow stream: every read takes one second of a fake clock and gives at most ten bytes."""

    def __init__(self, clock: list[float], data: bytes):
        self.clock, self.data = clock, io.BytesIO(data)

    def read(self, size=-1):
        self.clock[0] += 1
        return self.data.read(min(size, 10) if size >= 0 else 10)

    readline = read


def test_without_a_socket_the_deadline_is_checked_before_each_read(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(body_timeout, "monotonic", lambda: clock[0])
    timed = TimedInput(ClockedStream(clock, b"x" * 100), length=100, sock=None, read_timeout=10, deadline=2.5)

    assert timed.read(10) == b"x" * 10  # at 0 s
    assert timed.readline(10) == b"x" * 10  # at 1 s
    assert timed.read(10) == b"x" * 10  # at 2 s
    with pytest.raises(BodyReadTimeout):
        timed.read(10)  # at 3 s


def test_a_timeout_error_that_is_not_ours_propagates():
    class Failing:
        def read(self, size=-1):
            raise TimeoutError("from somewhere else")

    timed = TimedInput(Failing(), length=10, sock=None, read_timeout=1, deadline=0)
    with pytest.raises(TimeoutError, match="somewhere else"):
        timed.read(10)
    assert not timed.timed_out


def environ(path: str, stream, *, length: int | None = LENGTH, sock=None) -> dict:
    env = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": "", "SCRIPT_NAME": "",
           "SERVER_NAME": "testserver", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
           "wsgi.url_scheme": "http", "wsgi.input": stream, "CONTENT_TYPE": "application/json"}
    if length is not None:
        env["CONTENT_LENGTH"] = str(length)
    if sock is not None:
        env["gunicorn.socket"] = sock
    return env


def call(app, env: dict) -> tuple[str, dict, bytes]:
    started = {}

    def start_response(status, headers, exc_info=None):
        started.update(status=status, headers=dict(headers))

    body = b"".join(app(env, start_response))
    return started["status"], started["headers"], body


def test_a_request_without_a_body_goes_through_untouched():
    seen = {}

    def app(env, start_response):
        seen.update(input=env["wsgi.input"], start_response=start_response)
        start_response("200 OK", [])
        return [b""]

    stream, start_response = io.BytesIO(), lambda status, headers, exc_info=None: None
    BodyTimeoutMiddleware(app, read_timeout=1, deadline=1)(environ("/v1/x", stream, length=None), start_response)

    assert seen == {"input": stream, "start_response": start_response}


@pytest.mark.parametrize(("path", "content_type", "expected"), [
    ("/v1/records", "application/json",
     {"error": "request_timeout", "message": "The request body did not arrive in time."}),
    ("/reset-password", "text/plain; charset=utf-8", b"Request Timeout"),
])
def test_a_timed_out_body_is_answered_408_whatever_the_view_made_of_it(monkeypatch, path, content_type, expected):
    def app(env, start_response):  # a view that reads the body and reports failure its own way
        try:
            while env["wsgi.input"].read(LENGTH):
                pass
        except BodyReadTimeout:
            start_response("400 Bad Request", [("Content-Type", "text/html")])
            return [b"<h1>Bad Request</h1>"]

    clock = [0.0]
    monkeypatch.setattr(body_timeout, "monotonic", lambda: clock[0])
    middleware = BodyTimeoutMiddleware(app, read_timeout=1, deadline=1.5)

    status, headers, body = call(middleware, environ(path, ClockedStream(clock, b"x" * LENGTH)))

    assert status == "408 Request Timeout"
    assert headers["Content-Type"] == content_type
    assert (json.loads(body) if path.startswith("/v1/") else body) == expected


def test_other_responses_are_passed_through():
    def app(env, start_response):
        data = env["wsgi.input"].read(5)
        start_response("201 Created", [("X-Echo", data.decode())])
        return [data]

    middleware = BodyTimeoutMiddleware(app, read_timeout=1, deadline=5)
    assert call(middleware, environ("/v1/x", io.BytesIO(b"hello"), length=5)) == ("201 Created", {"X-Echo": "hello"},
                                                                                     b"hello")


def django_app(env, start_response):
    """Django's own request handling (the test client's handler, which keeps the test's DB connection)."""
    response = ClientHandler(enforce_csrf_checks=False)(env)
    start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
    return [response.content]


@pytest.mark.django_db
def test_drf_answers_a_stalled_json_body_with_the_envelope(client_and_server):
    client, server = client_and_server
    client.sendall(b'{"email":')
    app = BodyTimeoutMiddleware(django_app, read_timeout=0.3, deadline=0)

    status, headers, body = call(app, environ("/v1/auth/login", gunicorn_body(server), sock=server))

    assert status.startswith("408")
    assert "X-Content-Type-Options" in headers  # DRF's own answer, through Django's middleware, not replaced
    assert json.loads(body)["error"] == "request_timeout"


@pytest.mark.django_db
def test_a_page_with_a_stalled_form_is_408_without_an_error_logged(client_and_server, caplog):
    client, server = client_and_server
    client.sendall(b"token=abc")
    app = BodyTimeoutMiddleware(django_app, read_timeout=0.3, deadline=0)
    env = environ("/reset-password", gunicorn_body(server), sock=server)
    env["CONTENT_TYPE"] = "application/x-www-form-urlencoded"

    with caplog.at_level(logging.WARNING):
        status, _, body = call(app, env)

    assert (status, body) == ("408 Request Timeout", b"Request Timeout")
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
