"""Retries against a stub HTTP server: 429 with Retry-After for every call, 5xx for idempotent calls and for
signing calls under one Idempotency-Key (the live service's replay: tests/client/test_live.py)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from svc_client import Client, NotFound, RateLimited, RetryPolicy, ServerError, ServiceUnavailable, ValidationError
from svc_client.signing import RecordDraft

DRAFT = RecordDraft(content_hash="sha3-256:" + "0" * 64, generator_id="g", model="m", watermark_id="none",
                    signature=b"s")


class Stub:
    """Answers each request with the next (status, headers, body) of a script; records what it got."""

    def __init__(self, script):
        self.script, self.requests = list(script), []

    def __enter__(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                stub.requests.append((self.command, self.path, self.rfile.read(length), dict(self.headers)))
                status, headers, body = stub.script.pop(0)
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                payload = json.dumps(body).encode()
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def client_for(stub, waits):
    return Client(stub.url, "svc_key_test", retry=RetryPolicy(sleep=waits.append, jitter=lambda: 1.0))


RECORD = {"record_id": "r", "content_hash": "h"}
LIMITED = (429, {"Retry-After": "2"}, {"error": "rate_limited", "message": "slow down"})
UNAVAILABLE = (503, {}, {"error": "internal_error", "message": "down"})


def test_a_read_waits_out_retry_after_then_backs_off_on_503_and_succeeds():
    waits = []
    with Stub([LIMITED, UNAVAILABLE, (200, {}, RECORD)]) as stub:
        assert client_for(stub, waits).record_get("r") == RECORD
    assert waits == [2.0, 1.0]  # Retry-After as given, then the second backoff step (0.5 s doubled)
    assert len(stub.requests) == 3


def test_a_signing_call_is_retried_after_429_and_5xx_under_one_idempotency_key():
    waits = []
    created = (201, {}, {"token": "svc_t", "record_id": "r"})
    with Stub([LIMITED, UNAVAILABLE, created, created]) as stub:
        client = client_for(stub, waits)
        assert client.record_submit(DRAFT).record_id == "r"
        client.record_submit(DRAFT)
    assert waits == [2.0, 1.0]
    assert [r[1] for r in stub.requests] == ["/v1/records"] * 4
    keys = [r[3]["Idempotency-Key"] for r in stub.requests]
    assert keys[0] == keys[1] == keys[2] != keys[3]  # one key across a call's tries, a new one per call


def test_a_signing_call_that_keeps_failing_raises_the_last_error():
    with Stub([UNAVAILABLE] * 4) as stub, pytest.raises(ServerError) as caught:
        client_for(stub, []).record_submit(DRAFT)
    assert len(stub.requests) == 4
    assert caught.value.code == "internal_error" and caught.value.status == 503


def test_retries_stop_after_the_policys_attempts_with_the_last_error():
    waits = []
    with Stub([UNAVAILABLE] * 4) as stub, pytest.raises(ServerError):
        client_for(stub, waits).keys_get("g")
    assert waits == [0.5, 1.0, 2.0]
    assert len(stub.requests) == 4


def test_a_retry_after_longer_than_the_policy_allows_is_raised_at_once():
    waits = []
    with Stub([(429, {"Retry-After": "3600"}, {"error": "rate_limited", "message": "later"})]) as stub, \
            pytest.raises(RateLimited) as caught:
        client_for(stub, waits).record_get("r")
    assert waits == [] and caught.value.retry_after == 3600.0


def test_error_envelopes_become_exceptions_that_carry_the_code():
    with Stub([(404, {}, {"error": "not_found", "message": "no record"}),
               (400, {}, {"error": "signature_invalid", "message": "bad", "details": {"signature": ["x"]}})]) as stub:
        client = client_for(stub, [])
        with pytest.raises(NotFound) as missing:
            client.record_get("r")
        with pytest.raises(ValidationError) as invalid:
            client.record_submit(DRAFT)
    assert missing.value.code == "not_found"
    assert (invalid.value.code, invalid.value.details) == ("signature_invalid", {"signature": ["x"]})


def test_an_unreachable_service_is_retried_for_reads_then_reported():
    waits = []
    client = Client("http://127.0.0.1:9", retry=RetryPolicy(sleep=waits.append, jitter=lambda: 0.0))
    with pytest.raises(ServiceUnavailable):
        client.record_get("r")
    assert waits == [0.25, 0.5, 1.0]
