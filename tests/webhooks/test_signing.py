"""webhooks/signing.py: the X-Service-Signature header, checked against an HMAC computed here."""

import hashlib
import hmac

from webhooks.signing import HEADER, signature_header, signature_verify

SECRET = "whsec_test-secret"
BODY = b'{"id":"d1","event":"record.created"}'


def test_the_header_is_t_and_the_hex_hmac_of_timestamp_dot_body():
    expected = hmac.new(SECRET.encode(), b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert signature_header(secret=SECRET, body=BODY, timestamp=1700000000) == f"t=1700000000,v1={expected}"
    assert HEADER == "X-Service-Signature"


def test_a_receiver_accepts_a_fresh_signature():
    header = signature_header(secret=SECRET, body=BODY, timestamp=1700000000)
    assert signature_verify(secret=SECRET, body=BODY, header=header, now=1700000000 + 300)


def test_a_receiver_rejects_an_old_signature_a_changed_body_and_another_secret():
    header = signature_header(secret=SECRET, body=BODY, timestamp=1700000000)
    assert not signature_verify(secret=SECRET, body=BODY, header=header, now=1700000000 + 301)
    assert not signature_verify(secret=SECRET, body=BODY + b" ", header=header, now=1700000000)
    assert not signature_verify(secret="whsec_other", body=BODY, header=header, now=1700000000)


def test_a_receiver_rejects_malformed_headers():
    for header in ("", "t=abc,v1=00", "v1=00", "t=1700000000", "t=1700000000,v1=" + "0" * 64):
        assert not signature_verify(secret=SECRET, body=BODY, header=header, now=1700000000), header


def test_the_default_timestamp_is_now():
    assert signature_verify(secret=SECRET, body=BODY, header=signature_header(secret=SECRET, body=BODY))
