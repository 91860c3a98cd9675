"""RFC 3161 time stamps against a real authority (OpenSSL's `ts -reply`, tests/tsa_server.py): the token
we keep is checked by our code (record_format.timestamp) and by OpenSSL's `ts -verify`, and every way a
token or an authority can be wrong is refused."""

import datetime
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography.hazmat.primitives import serialization

from core import tsa
from record_format import timestamp
from tests.tsa_server import OPENSSL, LocalTsa

pytestmark = pytest.mark.skipif(OPENSSL is None, reason="the openssl command is not installed")
SIGNATURE = bytes(range(256)) * 13  # stands in for a signature's bytes


@pytest.fixture(scope="module")
def authority():
    with LocalTsa() as running:
        yield running


@pytest.fixture
def answers_tokens(authority):
    authority.answer_tokens()
    yield authority
    authority.answer_tokens()


def test_a_token_from_the_authority_proves_the_time_of_exactly_those_bytes(answers_tokens, tmp_path):
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0) - datetime.timedelta(seconds=1)
    token = tsa.stamp(SIGNATURE, url=answers_tokens.url)
    stamped = timestamp.time_of(token, SIGNATURE, [answers_tokens.root])
    assert before <= stamped <= datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
    # OpenSSL, independently: the token over these bytes, chained to the authority's root.
    (tmp_path / "data").write_bytes(SIGNATURE)
    (tmp_path / "token.der").write_bytes(token)
    (tmp_path / "root.pem").write_bytes(answers_tokens.root.public_bytes(serialization.Encoding.PEM))
    checked = subprocess.run([OPENSSL, "ts", "-verify", "-data", str(tmp_path / "data"), "-in",
                              str(tmp_path / "token.der"), "-token_in", "-CAfile", str(tmp_path / "root.pem")],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "Verification: OK" in checked.stdout, checked.stdout + checked.stderr


def test_other_bytes_another_authority_or_a_changed_token_are_refused(answers_tokens):
    token = tsa.stamp(SIGNATURE, url=answers_tokens.url)
    with pytest.raises(timestamp.TimestampError, match="does not verify"):
        timestamp.time_of(token, SIGNATURE + b"\0", [answers_tokens.root])
    with LocalTsa(common_name="Another Authority") as other, pytest.raises(timestamp.TimestampError,
                                                                          match="does not verify"):
        timestamp.time_of(token, SIGNATURE, [other.root])
    changed = bytearray(token)
    changed[len(changed) // 2] ^= 0x01
    with pytest.raises(timestamp.TimestampError):
        timestamp.time_of(bytes(changed), SIGNATURE, [answers_tokens.root])
    with pytest.raises(timestamp.TimestampError, match="no time-stamp authority"):
        timestamp.time_of(token, SIGNATURE, [])
    with pytest.raises(timestamp.TimestampError, match="over"):
        timestamp.time_of(b"\x30" * (timestamp.MAX_TOKEN_BYTES + 1), SIGNATURE, [answers_tokens.root])


def test_an_answer_to_another_request_is_refused(answers_tokens):
    import requests

    first, second = timestamp.request_for(SIGNATURE), timestamp.request_for(SIGNATURE)
    answer = requests.post(answers_tokens.url, data=first.as_bytes(), timeout=60,
                           headers={"Content-Type": "application/timestamp-query"}).content
    assert timestamp.token_from_response(answer, first)
    with pytest.raises(timestamp.TimestampError, match="nonce"):
        timestamp.token_from_response(answer, second)
    other_data = timestamp.request_for(b"other bytes")
    with pytest.raises(timestamp.TimestampError):
        timestamp.token_from_response(answer, other_data)


@pytest.mark.parametrize(("status", "content_type", "body", "reason"), [
    (500, "text/html", b"<html>down</html>", "HTTP 500"),
    (200, "text/html", b"<html>hello</html>", "text/html content"),
    (200, "application/timestamp-reply", b"not DER at all", "not a time-stamp response"),
    # A refusal, as a TSA sends it: TimeStampResp { status { rejection (2) } } and no token.
    (200, "application/timestamp-reply", bytes.fromhex("30053003020102"), "refused"),
])
def test_an_authority_that_does_not_answer_a_stamp_is_unavailable(answers_tokens, status, content_type, body,
                                                                    reason):
    answers_tokens.answer_with(status, content_type, body)
    with pytest.raises(tsa.TimestampUnavailable, match=reason):
        tsa.stamp(SIGNATURE, url=answers_tokens.url)


def test_an_oversized_answer_is_not_read_to_its_end(answers_tokens):
    answers_tokens.answer_with(200, "application/timestamp-reply", b"\0" * (10 * timestamp.MAX_TOKEN_BYTES))
    with pytest.raises(tsa.TimestampUnavailable, match="over"):
        tsa.stamp(SIGNATURE, url=answers_tokens.url)


def test_no_authority_configured_stamps_nothing_and_an_unreachable_one_is_unavailable(settings):
    settings.TSA_URL = ""
    assert tsa.stamp(SIGNATURE) is None
    from tests.proc_sockets import free_port

    with pytest.raises(tsa.TimestampUnavailable, match="could not be reached"):
        tsa.stamp(SIGNATURE, url=f"http://127.0.0.1:{free_port()}/")


class _Hanging(BaseHTTPRequestHandler):
    release = threading.Event()

    def do_POST(self):
        self.release.wait(60)

    def log_message(self, *args):
        pass


def test_an_authority_that_never_answers_is_given_up_after_the_timeout(settings):
    settings.TSA_TIMEOUT_SECONDS = 0.5
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hanging)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(tsa.TimestampUnavailable, match="could not be reached"):
            tsa.stamp(SIGNATURE, url=f"http://127.0.0.1:{server.server_port}/")
    finally:
        _Hanging.release.set()
        server.shutdown()
        server.server_close()


class _Trickling(BaseHTTPRequestHandler):
    """Announces a token-sized answer, then sends it a byte every 50 ms, for at most 400 bytes."""

    sent = 0
    finished = threading.Event()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", "400")
        self.end_headers()
        try:
            for _ in range(400):
                self.wfile.write(b"\0")
                self.wfile.flush()
                type(self).sent += 1
                time.sleep(0.05)
        except OSError:  # the client hung up
            pass
        finally:
            type(self).finished.set()

    def log_message(self, *args):
        pass


def test_an_authority_that_trickles_its_answer_is_given_up_before_it_ends(settings):
    # The whole answer would take 20 s: the client must hang up before its end, not read it all and then
    # find the deadline passed.
    settings.TSA_TIMEOUT_SECONDS = 0.5
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickling)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(tsa.TimestampUnavailable, match="took too long"):
            tsa.stamp(SIGNATURE, url=f"http://127.0.0.1:{server.server_port}/")
        assert _Trickling.finished.wait(60)
        assert _Trickling.sent < 400
    finally:
        server.shutdown()
        server.server_close()


def test_the_token_check_needs_no_django():
    """The client's offline verifier imports record_format.timestamp without the service."""
    import sys

    code = "import record_format.timestamp, sys; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
    assert shutil.which("openssl")


def test_several_stamps_go_out_together_and_each_is_its_own(answers_tokens):
    messages = [f"signature {n}".encode() for n in range(6)]
    tokens = tsa.stamp_many(messages, url=answers_tokens.url)
    roots = [answers_tokens.root]
    for token, message in zip(tokens, messages, strict=True):
        assert timestamp.time_of(token, message, roots)  # each token stamps its own message
    serials = {timestamp._decode(timestamp._granted_response(token)).tst_info.serial_number for token in tokens}
    assert len(serials) == 6  # the authority answered them concurrently, each with its own serial number
    assert tsa.stamp_many([], url=answers_tokens.url) == []
